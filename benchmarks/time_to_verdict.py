"""Time to a +-2% speed interval: spawned repeats (the launcher before issue 16) against
repeats forked from the zygote, same workload, interleaved.

Workload ``mlp-train`` (tiny), baseline ``cpu``, target ``cpu+threads=1``; both protocols
are ``api.compare`` with parity's defaults except ``precision=0.02`` and a budget large
enough to reach it (``--budget``, default 600 s): rounds of one fresh process per side
(ABBA) until the 95% interval of the time ratio (parity's, on log per-process medians, the
interval whose coverage ``coverage.py`` measures) is within +-2%, then the target's two
compliance runs. The only difference is how each repeat's process starts:

- spawn: a new interpreter per repeat, which imports torch first (``PARITY_LAUNCHER=spawn``);
- fork: forked from the comparison's zygote, which imported torch once (the default).

The comparisons run in the order spawn, fork, fork, spawn, ... (``--pairs``), so drift in
the machine's load hits both alike. Each one's wall time is of the whole call (freezing,
the zygote's start, the fp64 reference, measuring, judging, the report). Figure: median
fork wall over median spawn wall, counted only where both stopped on precision.

    .venv/bin/python benchmarks/time_to_verdict.py [--quick] [--pairs N] [--budget S] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import load_line, table

from parity.api import compare
from parity.request import CompareRequest

WORKLOAD = "mlp-train"
BASELINE = "cpu"
TARGET = "cpu+threads=1"
PRECISION = 0.02
TARGET_RATIO = 0.5


@dataclass
class Outcome:
    launcher: str
    wall_s: float
    processes: int
    half_width: float
    ratio: float
    stop: str
    busy: float | None
    precision: float

    @property
    def reached(self) -> bool:
        return self.stop == "precision" and self.half_width <= self.precision


def one(launcher: str, out: Path, precision: float, budget: float) -> Outcome:
    os.environ["PARITY_LAUNCHER"] = launcher
    request = CompareRequest.from_kwargs(
        workload=WORKLOAD,
        baseline=BASELINE,
        target=TARGET,
        precision=precision,
        budget_s=budget,
        out=str(out),
    )
    t0 = time.perf_counter()
    result = compare(request)
    wall = time.perf_counter() - t0
    speed = result.verdict.speed
    if speed is None or speed.stop is None:
        raise SystemExit(f"no speed verdict in {out / 'verdict.json'}: a side failed")
    busy = speed.stop.interference.share if speed.stop.interference else None
    return Outcome(
        launcher=launcher,
        wall_s=wall,
        processes=speed.repeats.target,
        half_width=speed.interval.half_width_rel,
        ratio=speed.ratio,
        stop=speed.stop.reason,
        busy=busy,
        precision=precision,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="±5%% and one pair: a smoke run")
    parser.add_argument("--pairs", type=int, help="spawn/fork pairs (default 2, quick 1)")
    parser.add_argument("--budget", type=float, default=600.0, help="budget_s of each compare")
    parser.add_argument("--keep", type=Path, help="keep the comparisons under this new directory")
    args = parser.parse_args()
    pairs = args.pairs or (1 if args.quick else 2)
    precision = 0.05 if args.quick else PRECISION
    print(f"time_to_verdict: {time.strftime('%Y-%m-%d %H:%M:%S')}, {load_line()}")
    print(f"{WORKLOAD}: baseline {BASELINE}, target {TARGET}, precision ±{precision:.0%}")
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="parity-ttv-") as tmp:
        root = args.keep or Path(tmp)
        for p in range(pairs):
            order = ("spawn", "fork") if p % 2 == 0 else ("fork", "spawn")
            for launcher in order:
                out = root / f"{p}-{launcher}"
                outcomes.append(one(launcher, out, precision, args.budget))
                o = outcomes[-1]
                print(f"  {launcher}: {o.wall_s:.1f} s, ±{o.half_width:.2%}, stop {o.stop}")
    os.environ.pop("PARITY_LAUNCHER", None)
    rows = [
        (
            o.launcher,
            f"{o.wall_s:.1f}",
            o.processes,
            f"{o.ratio:.4f}",
            f"±{o.half_width:.2%}",
            o.stop,
            "-" if o.busy is None else f"{o.busy:.0%}",
        )
        for o in outcomes
    ]
    print(
        table(
            ("launcher", "wall s", "procs/side", "ratio t/b", "half-width", "stop", "busy"),
            rows,
        )
    )
    print("busy: other processes' share of the machine while it measured (side.json)")
    print(f"after: {load_line()}")
    walls = {
        name: [o.wall_s for o in outcomes if o.launcher == name and o.reached]
        for name in ("spawn", "fork")
    }
    if not walls["spawn"] or not walls["fork"]:
        missing = [name for name, w in walls.items() if not w]
        print(
            f"RESULT: time_to_verdict: {', '.join(missing)} never reached ±{precision:.0%} "
            f"(target fork/spawn <= {TARGET_RATIO}) FAIL"
        )
        return
    spawn, fork = statistics.median(walls["spawn"]), statistics.median(walls["fork"])
    ratio = fork / spawn
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(
        f"RESULT: time_to_verdict fork/spawn {ratio:.3f} ({fork:.1f} s vs {spawn:.1f} s to "
        f"±{precision:.0%}) (target <= {TARGET_RATIO}) {verdict}"
    )


if __name__ == "__main__":
    main()
