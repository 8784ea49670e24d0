"""Sides on two cluster nodes run side by side: the wall time of the measuring part (the
rounds) against the sum of the two sides' runs, from one comparison's own record.

Starts a local cluster (``parity.testing.raycluster``: a head and two worker nodes with
the resources ``side-a`` and ``side-b``), then runs ``mlp-train`` (``cpu`` against
``cpu+bf16``, ``--repeats R``, no compliance runs) with ``--place baseline=side-a --place
target=side-b``. The orchestrator records each round's wall time and each process's;
the figure is the rounds' wall time over the sum of every process's (1.0: one after the
other; 0.5: two equal sides fully at the same time). The first round runs side by side
too (mlp-train generates nothing). On one machine the two nodes share its CPUs, so each
side's processes are slower side by side than alone: the ratio is of wall times here.

Target (issue 58): the rounds' wall time close to the slower side's, not the sum.

    .venv/bin/python benchmarks/cluster_side_by_side.py --repeats 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import load_line

from parity import api
from parity.request import CompareRequest
from parity.testing.raycluster import local_cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="parity-bench-"))
    print(load_line())
    with local_cluster() as cluster:
        request = CompareRequest.from_kwargs(
            workload="mlp-train", target="cpu+bf16", repeats=args.repeats, compliance=False,
            steps=args.steps, out=str(root / "cmp"), cluster=cluster.client,
            place=["baseline=side-a", "target=side-b"], report=False,
        )  # fmt: skip
        began = time.monotonic()
        result = api.compare(request, progress=False)
        wall = time.monotonic() - began
    spans: dict[str, list[tuple[float, float]]] = {}
    for role, side in (("baseline", result.baseline), ("target", result.target)):
        for b in side.repeats:
            m = b.manifest
            if m.started_unix is not None and m.finished_unix is not None:
                spans.setdefault(role, []).append((m.started_unix, m.finished_unix))
    each = {role: sum(end - start for start, end in s) for role, s in spans.items()}
    every = [x for s in spans.values() for x in s]
    measured = max(end for _, end in every) - min(start for start, _ in every)
    total = sum(each.values())
    speed = result.verdict.speed
    stop = speed.stop if speed is not None else None
    notes = [n for n in (stop.notes or ()) if "side by side" in n] if stop else []
    print(*(f"note: {n}" for n in notes), sep="\n")
    print(load_line())
    print(f"comparison wall {wall:.1f} s; processes: {len(every)}")
    print(" | ".join(f"{role} runs {t:.1f} s" for role, t in each.items()))
    print(
        f"measuring span {measured:.1f} s; sum of the sides {total:.1f} s; slower side "
        f"{max(each.values()):.1f} s"
    )
    print(
        f"ratio span/sum = {measured / total:.2f} (1.00: one after the other); "
        f"span/slower side = {measured / max(each.values()):.2f}"
    )


if __name__ == "__main__":
    main()
