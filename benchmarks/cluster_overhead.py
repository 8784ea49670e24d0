"""What a Ray cluster adds to a comparison: per forked repeat and per comparison, against
the same compare run on this machine, side by side in one run.

Starts a local cluster (``parity.testing.raycluster``: a head and two worker nodes with
the resources ``side-a`` and ``side-b``, one CPU each), then runs the same comparison of
``mlp-train`` (tiny, ``cpu`` against ``cpu+bf16``, ``--repeats R``, no compliance runs, 4
steps) alternately here and with ``--cluster --place baseline=side-a --place
target=side-b``, ``--rounds`` times each (local first, then cluster, then local...).

For each repeat, from its ``metrics.json``: ``start_import_s + load_s``, the launch of the
repeat (forked from its side's zygote, on its node) to ready for the first step. For each
comparison: its wall time from the API call to the verdict; the cluster's includes
joining the cluster and starting the two side actors (and their zygotes) on their nodes.

Target (issue 27): per-repeat start on the cluster within 10% of local.

    .venv/bin/python benchmarks/cluster_overhead.py              # 2 rounds, 3 repeats
    .venv/bin/python benchmarks/cluster_overhead.py --rounds 1 --repeats 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import load_line, table

from parity import api
from parity.request import CompareRequest
from parity.testing.raycluster import local_cluster

LIMIT_SHARE = 0.10


def one(out: Path, repeats: int, cluster: str | None) -> tuple[float, list[tuple[float, float]]]:
    """A comparison's wall time and each repeat's start: (launch to imported, load), s."""
    kwargs: dict[str, object] = {
        "workload": "mlp-train", "target": "cpu+bf16", "repeats": repeats,
        "compliance": False, "steps": 4, "out": str(out),
    }  # fmt: skip
    if cluster is not None:
        kwargs |= {"cluster": cluster, "place": ["baseline=side-a", "target=side-b"]}
    request = CompareRequest.from_kwargs(**kwargs)
    began = time.monotonic()
    result = api.compare(request)
    wall = time.monotonic() - began
    starts = [
        (p.start_import_s, p.load_s)
        for side in (result.baseline, result.target)
        for b in side.ok
        if b.metrics is not None
        and (p := b.metrics.phases).start_import_s is not None
        and p.load_s is not None
    ]
    return wall, starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"local": [], "cluster": []}
    starts: dict[str, list[tuple[float, float]]] = {"local": [], "cluster": []}
    root = Path(tempfile.mkdtemp(prefix="parity-bench-"))
    print(load_line())
    cluster_up = time.monotonic()
    with local_cluster() as cluster:
        print(f"local cluster up in {time.monotonic() - cluster_up:.1f} s ({cluster.client})")
        for k in range(args.rounds):
            for where in ("local", "cluster"):
                address = cluster.client if where == "cluster" else None
                wall, s = one(root / f"{where}{k}", args.repeats, address)
                walls[where].append(wall)
                starts[where].extend(s)
                print(f"round {k}: {where}: {wall:.1f} s, {len(s)} repeats started")
    rows = []
    median = {w: statistics.median(a + b for a, b in starts[w]) for w in starts}
    for where in ("local", "cluster"):
        rows.append((
            where, len(starts[where]), f"{median[where]:.3f}",
            f"{statistics.median(a for a, _ in starts[where]):.3f}",
            f"{statistics.median(b for _, b in starts[where]):.3f}",
            f"{statistics.median(walls[where]):.1f}",
        ))  # fmt: skip
    print(table(
        ("where", "repeats", "start median (s)", "of it: launch to imported", "load",
         "comparison median (s)"), rows,
    ))  # fmt: skip
    share = median["cluster"] / median["local"] - 1
    extra = statistics.median(walls["cluster"]) - statistics.median(walls["local"])
    print(f"per repeat start: cluster {share:+.1%} against local (target: within 10%)")
    print(f"per comparison: cluster adds {extra:+.1f} s (join, actors, zygotes, transfers)")
    print(load_line())
    verdict = "PASS" if abs(share) <= LIMIT_SHARE else "FAIL"
    print(f"RESULT: cluster_overhead per-repeat start {share:+.1%} (target within 10%) {verdict}")


if __name__ == "__main__":
    main()
