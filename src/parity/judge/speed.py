"""The speed section of the verdict: a ratio over fresh processes with its interval, and the
two compliance-style checks that keep a speed claim honest.

Each fresh process is reduced to the median of its steady steps. A side's step time
(``baseline_median_s``, ``target_median_s``) is the geometric mean of its processes'
medians, and the ratio is the target's over the baseline's, with a Welch t interval on the
log process medians (:func:`parity.stats.ratio_ci`), provisional with fewer than
:data:`parity.stats.MIN_PROCESSES` processes per side.

The compliance runs (one extra process each, on the target) are judged against what
process-to-process variation explains: a prediction interval, at :data:`COMPLIANCE_LEVEL`,
for one more process's median step, from the comparison's own processes
(:func:`parity.stats.prediction_interval`):

- Re-seeded run (MLPerf TEST05 style): another seed (other weights and data of the same
  shapes); fails when its median step lies outside the two-sided interval.
- Identical-input run (MLPerf TEST04 style): one input fed at every step; fails when its
  median step lies below the interval's lower bound (faster than noise explains).

At 98% each, the two together fail identical noisy sides in 2-4% of comparisons (at most
5% is asked; ``tests/judge/test_speed_simulation.py`` measures it, with the rates at which
planted faults are caught). A failure says what was seen; the cause (values that change
the speed, a cache, or interference on the machine) is for the reader to find.
"""

from __future__ import annotations

import statistics
from typing import Any

from parity.bundle import Bundle, SideRuns
from parity.stats import PredictionInterval, Processes, Sided, prediction_interval, ratio_ci

COMPLIANCE_LEVEL = 0.98
#: (key of the run in ``SideRuns.compliance``, check name, sidedness, what it is)
COMPLIANCE_RUNS: tuple[tuple[str, str, Sided, str], ...] = (
    ("reseeded", "re-seeded run within process variation", "two-sided", "the re-seeded run"),
    (
        "same-input",
        "identical input not faster than process variation",
        "lower",
        "the identical-input run",
    ),
)


def steady_samples(bundle: Bundle) -> list[float]:
    samples = bundle.metrics.get("step_samples_s") or []
    return list(samples[int(bundle.metrics.get("steady_from_step", 1)) :])


def judge_speed(a: SideRuns, b: SideRuns) -> dict[str, Any] | None:
    steady_a = [s for s in (steady_samples(x) for x in a.ok) if s]
    steady_b = [s for s in (steady_samples(x) for x in b.ok) if s]
    if not steady_a or not steady_b:
        return None
    baseline = Processes.from_steps(steady_a, "baseline")
    target = Processes.from_steps(steady_b, "target")
    ci = ratio_ci(baseline, target)
    checks = compliance(b, target, baseline)
    failed = [c["name"] for c in checks if c["passed"] is False]
    return {
        "reliable": not failed,
        "unreliable_because": failed,
        "baseline_median_s": baseline.centre,
        "target_median_s": target.centre,
        "ratio": ci.ratio,
        "speedup": ci.speedup,
        "interval": {
            "low": ci.low,
            "high": ci.high,
            "confidence": ci.confidence,
            "half_width_rel": ci.half_width_rel,
            "method": ci.method,
            "df": ci.df,
            "provisional": ci.provisional,
            "spread": {"baseline": ci.baseline_spread, "target": ci.target_spread},
        },
        "verdict": ci.verdict,
        "repeats": {"baseline": baseline.count, "target": target.count},
        "stop": b.info.get("stop") or a.info.get("stop"),
        "note": ci.note,
        "throughput": {
            "baseline": a.first.metrics.get("throughput"),
            "target": b.first.metrics.get("throughput"),
        },
        "compliance": checks,
    }


def compliance(
    runs: SideRuns, target: Processes, baseline: Processes | None = None
) -> list[dict[str, Any]]:
    """The target's compliance runs, each judged against process-to-process variation."""
    checks: list[dict[str, Any]] = []
    for key, name, sided, what in COMPLIANCE_RUNS:
        bundle = runs.compliance.get(key)
        if bundle is not None:
            checks.append(_check(name, what, bundle, target, baseline, sided))
    return checks


def noise_interval(
    target: Processes, baseline: Processes | None, sided: Sided
) -> PredictionInterval | None:
    """Where one more target process's median step falls, as a ratio to the target's step
    time, by process-to-process variation alone (None: not estimable)."""
    return prediction_interval(target, other=baseline, level=COMPLIANCE_LEVEL, sided=sided)


def _check(
    name: str,
    what: str,
    bundle: Bundle,
    target: Processes,
    baseline: Processes | None,
    sided: Sided,
) -> dict[str, Any]:
    if not bundle.ok:
        return {
            "name": name,
            "passed": False,
            "detail": f"the run failed: {bundle.manifest.get('reason')}",
        }
    samples = steady_samples(bundle)
    if not samples:
        return {"name": name, "passed": False, "detail": "no steady-state samples"}
    ratio = statistics.median(samples) / target.centre
    seen = f"{what}'s median step was {ratio:.3f}x the target's"
    pi = noise_interval(target, baseline, sided)
    if pi is None:
        return {
            "name": name,
            "passed": None,
            "ratio": ratio,
            "detail": f"{seen}; not judged: with one process per side the variation between "
            "processes is unknown; run at least 2 repeats per side",
        }
    passed = pi.contains(ratio)
    if sided == "lower":
        where = "not below" if passed else "below"
        what_pi = "lower prediction bound"
    else:
        where = "within" if passed else "outside"
        what_pi = "prediction interval"
    return {
        "name": name,
        "passed": passed,
        "ratio": ratio,
        "low": pi.low,
        "high": pi.high,
        "level": pi.level,
        "detail": f"{seen}, {where} the {pi.bounds} that process-to-process variation "
        f"explains ({pi.level * 100:g}% {what_pi} from the {pi.processes} processes of both "
        "sides)",
    }
