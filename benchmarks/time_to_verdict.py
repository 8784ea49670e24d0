"""Time to a speed verdict: parity's adaptive protocol against a fixed one-process protocol.

Workload ``mlp-train`` (tiny), baseline ``cpu``, target ``cpu+threads=1``.

- adaptive (parity): ``api.compare`` with ``Plan(precision=0.02, budget_s=BUDGET)``: fresh
  processes per side in ABBA rounds until the 95% interval of the time ratio is within
  +-2% or the budget is spent.
- fixed (like optimum-benchmark's default: 10 iterations of warm-up, then 10 s of
  measurement, one process per side): ``api.compare`` with ``Plan(repeats=1)`` and a step
  count of 10 + 10 s / step time, the step time taken from a short calibration compare.
  With one process per side its interval knows nothing of process-to-process variation.

Compliance runs are off in both (they time the target again and are not part of the
question). Wall times are of the whole ``api.compare`` call (freezing, process starts,
measuring, judging).

    python benchmarks/time_to_verdict.py [--quick] [--budget S] [--measure S] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import load_line, table

from parity.api import CompareResult, compare
from parity.runner.measure import Plan
from parity.spec import WorkloadSpec

WORKLOAD = "mlp-train"
BASELINE = "cpu"
TARGET = "cpu+threads=1"
PRECISION = 0.02
FIXED_WARMUP_STEPS = 10


def timed_compare(out: Path, plan: Plan, steps: int | None = None) -> tuple[CompareResult, float]:
    t0 = time.perf_counter()
    result = compare(WorkloadSpec(name=WORKLOAD, steps=steps), BASELINE, TARGET, out=out, plan=plan)
    return result, time.perf_counter() - t0


def speed_of(result: CompareResult) -> dict[str, Any]:
    speed = result.verdict.speed
    if speed is None:
        raise SystemExit(f"no speed section in {result.out / 'verdict.json'}: a side failed")
    return speed


def steps_seconds(result: CompareResult) -> str:
    """Seconds of timed steps per side, summed over its processes (baseline / target)."""
    got = [
        sum(sum(b.metrics["step_samples_s"]) for b in side.ok)
        for side in (result.baseline, result.target)
    ]
    return f"{got[0]:.1f} / {got[1]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--budget", type=float, help="adaptive budget_s (default 120, quick 20)")
    parser.add_argument(
        "--measure", type=float, help="fixed protocol's seconds of steps (default 10, quick 2)"
    )
    parser.add_argument("--keep", type=Path, help="keep the bundles under this new directory")
    args = parser.parse_args()
    budget = args.budget or (20.0 if args.quick else 120.0)
    measure_s = args.measure or (2.0 if args.quick else 10.0)

    print(f"time_to_verdict: {time.strftime('%Y-%m-%d %H:%M:%S')}, {load_line()}")
    print(f"{WORKLOAD}: baseline {BASELINE}, target {TARGET}")
    with tempfile.TemporaryDirectory(prefix="parity-ttv-") as tmp:
        root = args.keep or Path(tmp)

        calib, calib_s = timed_compare(root / "calibrate", Plan(repeats=1, compliance=False))
        cs = speed_of(calib)
        step_s = (cs["baseline_median_s"] + cs["target_median_s"]) / 2
        steps = FIXED_WARMUP_STEPS + math.ceil(measure_s / step_s)
        print(
            f"calibration ({calib_s:.1f} s, default steps): median step "
            f"{cs['baseline_median_s'] * 1e3:.3f} ms ({BASELINE}), "
            f"{cs['target_median_s'] * 1e3:.3f} ms ({TARGET}) -> fixed protocol runs "
            f"{FIXED_WARMUP_STEPS} + {steps - FIXED_WARMUP_STEPS} = {steps} steps per side"
        )

        adaptive, adaptive_s = timed_compare(
            root / "adaptive", Plan(precision=PRECISION, budget_s=budget, compliance=False)
        )
        fixed, fixed_s = timed_compare(
            root / "fixed", Plan(repeats=1, compliance=False), steps=steps
        )
        a, f = speed_of(adaptive), speed_of(fixed)

    rows = []
    for name, speed, wall, result in (
        ("adaptive (parity)", a, adaptive_s, adaptive),
        (f"fixed ({measure_s:g} s + {FIXED_WARMUP_STEPS} it)", f, fixed_s, fixed),
    ):
        interval = speed["interval"]
        rows.append(
            (
                name,
                f"{speed['repeats']['baseline']}",
                f"{wall:.1f}",
                steps_seconds(result),
                f"{speed['ratio']:.4f}",
                f"[{interval['low']:.4f}, {interval['high']:.4f}]",
                f"±{interval['half_width_rel']:.2%}",
                (speed["stop"] or {}).get("reason", "-"),
            )
        )
    print(
        table(
            (
                "protocol",
                "procs/side",
                "wall s",
                "steps s b/t",
                "ratio t/b",
                "95% interval",
                "half-width",
                "stop",
            ),
            rows,
        )
    )
    print(f"adaptive: {(a['stop'] or {}).get('message', '-')}")
    print(f"fixed: {f['note'] or 'more than one process per side'}")
    print(f"after: {load_line()}")

    half = a["interval"]["half_width_rel"]
    reached = (a["stop"] or {}).get("reason") == "precision" and half <= PRECISION
    verdict = "PASS" if reached else "FAIL"
    print(
        f"RESULT: time_to_verdict ±{half:.2%}@{adaptive_s:.1f}s "
        f"(target half-width <= {PRECISION:.0%}) {verdict}"
    )


if __name__ == "__main__":
    main()
