"""A sweep's cells with one kept zygote against one zygote per cell.

``parity sweep`` runs its cells' comparisons in one process inside
``parity.runner.kept.keep_zygotes``, so they fork their CPU jobs from one zygote (one
``import torch``) instead of starting a zygote per comparison. This script runs the same
cells both ways in one process, alternating A B B A (``--pairs``):

- A: each comparison with its own zygote (``api.compare`` alone, as before);
- B: the cells inside ``keep_zygotes()`` (as ``parity sweep`` runs them).

Each cell: ``WORKLOAD --target cpu+bf16 --repeats 1 --no-compliance --steps 6`` into a
fresh directory, with the frozen workload and probes cached by a first, untimed run (so
the difference is the zygotes'). Printed: each pass's wall time for ``--cells`` cells,
the medians, the ratio B/A, and ``RESULT`` (target: B/A <= 0.9 for 3 cells).

    python benchmarks/kept_zygote.py                    # mlp-train, 3 cells, 2 pairs
    python benchmarks/kept_zygote.py --workload gpt-train --cells 4 --pairs 1
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from _common import load_line

TARGET = 0.9


def _pass(workload: str, cells: int, root: Path, keep: bool) -> float:
    from parity import api
    from parity.request import CompareRequest
    from parity.runner.kept import keep_zygotes

    block = keep_zygotes() if keep else contextlib.nullcontext()
    start = time.perf_counter()
    with block:
        for _ in range(cells):
            out = Path(tempfile.mkdtemp(dir=root)) / "c"
            request = CompareRequest.from_kwargs(
                workload=workload, target="cpu+bf16", repeats=1, compliance=False, steps=6,
                out=str(out),
            )  # fmt: skip
            api.compare(request)
    return time.perf_counter() - start


@contextlib.contextmanager
def _cache() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="parity-kept-") as tmp:
        old = os.environ.get("PARITY_CACHE_DIR")
        os.environ["PARITY_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            yield Path(tmp)
        finally:
            if old is None:
                os.environ.pop("PARITY_CACHE_DIR", None)
            else:
                os.environ["PARITY_CACHE_DIR"] = old


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="mlp-train")
    parser.add_argument("--cells", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    print(load_line())
    with _cache() as root:
        _pass(args.workload, 1, root, keep=False)  # fills the caches, untimed
        times: dict[str, list[float]] = {"A": [], "B": []}
        for name in ("ABBA" * args.pairs)[: 2 * args.pairs]:
            took = _pass(args.workload, args.cells, root, keep=name == "B")
            times[name].append(took)
            print(f"{name} ({'kept zygote' if name == 'B' else 'a zygote per cell'}): "
                  f"{args.cells} cells in {took:.2f} s")  # fmt: skip
    a, b = statistics.median(times["A"]), statistics.median(times["B"])
    ratio = b / a
    print(f"median A {a:.2f} s, B {b:.2f} s, B/A {ratio:.3f}")
    print(f"RESULT: {'PASS' if ratio <= TARGET else 'FAIL'} (B/A {ratio:.3f}, target <= {TARGET})")


if __name__ == "__main__":
    main()
