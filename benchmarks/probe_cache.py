"""A second comparison of the same workload: the probe cache against running the probes.

One ``parity compare WORKLOAD --target cpu+bf16 --repeats 1 --no-compliance`` first fills
a cache directory the script makes (the frozen workload, the fp64 reference, the probes);
then the same command, in the order A B B A (``--pairs``), with:

- A: the probe cache emptied before the run (everything else still cached), so each
  side's quality run scans its ops and runs the numerics probe, as before issue 28;
- B: the probe cache as the earlier runs left it, so each side copies them.

``--repeats 1`` and no compliance runs fix the work, so the difference is the probes'.
Printed per run: the command's wall time, the probes' seconds as the verdict states them
(``speed.stop.probes``: op scan and numerics probe of both sides), then the ratios B/A of
the medians, and ``RESULT`` on the probes' ratio (target: at most 0.05).

    python benchmarks/probe_cache.py                      # gpt-generate, 2 pairs
    python benchmarks/probe_cache.py --workload gpt-train --pairs 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import load_line

PROBES_GLOB = "probes-v*"
#: the cached probes' share of running them (a copy against a scan)
TARGET = 0.05


@dataclass(frozen=True)
class Run:
    cached: bool
    wall_s: float
    probes_s: float
    names: tuple[str, ...]


def compare(workload: str, cache: Path, out: Path, *, warm: bool) -> Run:
    """One comparison in a fresh ``parity`` process; ``warm``: keep the probe cache."""
    if not warm:
        for entry in cache.glob(PROBES_GLOB):
            shutil.rmtree(entry)
    command = [sys.executable, "-m", "parity", "compare", workload, "--target", "cpu+bf16"]
    command += ["--repeats", "1", "--no-compliance", "--out", str(out)]
    env = {**os.environ, "PARITY_CACHE_DIR": str(cache)}
    t = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(f"parity compare failed ({done.returncode}): {done.stderr[-800:]}")
    probes = json.loads((out / "verdict.json").read_text())["speed"]["stop"]["probes"]
    seen = {k: v for k, v in probes.items() if "op scan" in k or "numerics probe" in k}
    return Run(cached=warm, wall_s=wall, probes_s=sum(seen.values()), names=tuple(seen))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="gpt-generate")
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    print(f"{load_line()}; workload {args.workload}, cpu against cpu+bf16, --repeats 1")
    root = Path(tempfile.mkdtemp(prefix="parity-probe-cache-"))
    try:
        cache = root / "cache"
        first = compare(args.workload, cache, root / "first", warm=True)
        print(f"cold (fills the caches): {first.wall_s:.1f} s, probes {first.probes_s:.2f} s")
        order = [False, True, True, False] * (args.pairs // 2) + [False, True] * (args.pairs % 2)
        runs = []
        for i, warm in enumerate(order):
            run = compare(args.workload, cache, root / f"run{i}", warm=warm)
            runs.append(run)
            label = "B cached probes" if warm else "A probes run   "
            print(f"{label}: wall {run.wall_s:6.1f} s, probes {run.probes_s:6.2f} s "
                  f"({', '.join(run.names)})")  # fmt: skip
        a = [r for r in runs if not r.cached]
        b = [r for r in runs if r.cached]
        wall_a, wall_b = (statistics.median(r.wall_s for r in x) for x in (a, b))
        probe_a, probe_b = (statistics.median(r.probes_s for r in x) for x in (a, b))
        print(
            f"medians: wall A {wall_a:.1f} s, B {wall_b:.1f} s, ratio B/A {wall_b / wall_a:.3f} "
            f"(saved {wall_a - wall_b:.1f} s); probes A {probe_a:.2f} s, B {probe_b:.3f} s, "
            f"ratio B/A {probe_b / probe_a:.4f}"
        )
        print(load_line())
        ratio = probe_b / probe_a
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        print(f"RESULT: probe_cache {ratio:.4f} (target probes B/A <= {TARGET}) {verdict}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
