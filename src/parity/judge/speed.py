"""The speed section of the verdict: pooled repeats, a ratio with its interval, and the
two compliance-style checks that keep a speed claim honest.

- Re-seeded run (MLPerf TEST05 style): the target with another seed (other weights and
  data of the same shapes) must time within 5% of the target's median; a larger gap
  means the speed depends on the particular numbers (sparsity, denormals, caching).
- Same-input run (MLPerf TEST04 style): the target fed one identical input every step
  must not be more than 10% faster; if it is, something caches results and the timed
  run may be faking speed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from parity.bundle import Bundle, SideRuns
from parity.judge.stats import ratio_ci
from parity.model.verdict import ByRole, ComplianceCheck, Interval, Speed

RESEEDED_BAND = 0.05
SAME_INPUT_FASTER = 0.10


def steady_samples(bundle: Bundle) -> list[float]:
    return list(bundle.metrics.steady_samples) if bundle.metrics is not None else []


def pooled_median(side: SideRuns) -> float | None:
    """The median steady step over every successful repeat of a side."""
    values = [x for b in side.ok for x in steady_samples(b)]
    return statistics.median(values) if values else None


def judge_speed(a: SideRuns, b: SideRuns) -> Speed | None:
    steady_a = [s for s in (steady_samples(x) for x in a.ok) if s]
    steady_b = [s for s in (steady_samples(x) for x in b.ok) if s]
    if not steady_a or not steady_b:
        return None
    ci = ratio_ci(steady_a, steady_b)
    note = None
    if min(len(steady_a), len(steady_b)) < 2:
        note = (
            "one process on a side: the interval knows nothing of process-to-process "
            "variation; use --repeats 2 or more for a claim"
        )
    checks = compliance(b)
    info = b.info or a.info
    stop = info.stop if info is not None else None
    return Speed(
        reliable=all(c.passed for c in checks),
        unreliable_because=tuple(c.name for c in checks if not c.passed),
        baseline_median_s=pooled_median(a),
        target_median_s=pooled_median(b),
        ratio=ci.ratio,
        speedup=ci.speedup,
        interval=Interval(
            low=ci.low,
            high=ci.high,
            confidence=ci.confidence,
            half_width_rel=ci.half_width_rel,
            method="hierarchical bootstrap over processes and steps",
        ),
        verdict=ci.verdict,
        repeats=ByRole(baseline=len(steady_a), target=len(steady_b)),
        stop=stop,
        note=note,
        throughput=ByRole(
            baseline=a.first.metrics.throughput if a.first.metrics else None,
            target=b.first.metrics.throughput if b.first.metrics else None,
        ),
        compliance=tuple(checks),
    )


def compliance(target: SideRuns) -> list[ComplianceCheck]:
    reference = pooled_median(target)
    checks: list[ComplianceCheck] = []
    if reference is None:
        return checks
    reseeded = target.compliance.get("reseeded")
    if reseeded is not None:
        checks.append(
            _check(
                "re-seeded run within 5%",
                reseeded,
                reference,
                lambda r: abs(r - 1) <= RESEEDED_BAND,
                "another seed changes the step time: speed depends on the values",
            )
        )
    same = target.compliance.get("same-input")
    if same is not None:
        checks.append(
            _check(
                "identical input not >10% faster",
                same,
                reference,
                lambda r: r >= 1 - SAME_INPUT_FASTER,
                "repeating one input is much faster: results may be cached",
            )
        )
    return checks


def _check(
    name: str, bundle: Bundle, reference: float, ok: Callable[[float], bool], why: str
) -> ComplianceCheck:
    if not bundle.ok:
        detail = f"the run failed: {bundle.manifest.reason}"
        return ComplianceCheck(name=name, passed=False, detail=detail)
    samples = steady_samples(bundle)
    if not samples:
        return ComplianceCheck(name=name, passed=False, detail="no steady-state samples")
    ratio = statistics.median(samples) / reference
    passed = ok(ratio)
    detail = f"median step {ratio:.3f}x the target's" + ("" if passed else f": {why}")
    return ComplianceCheck(name=name, passed=passed, ratio=ratio, detail=detail)
