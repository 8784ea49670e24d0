"""The speed section of the verdict: a ratio over fresh processes with its interval, and the
two compliance-style checks that keep a speed claim honest.

Each fresh process is reduced to the median of its steady steps. A side's step time
(``baseline_median_s``, ``target_median_s``, and every side figure derived from it) is the
geometric mean of its processes' medians (``side_step_time``), and the ratio is the
target's over the baseline's, with a t interval on the log process medians
(:func:`parity.stats.ratio_ci`), provisional with fewer than
:data:`parity.stats.MIN_PROCESSES` processes per side: paired round by round where the
sides ran in one comparison's rounds (:func:`one_run`), at least
:data:`parity.stats.PAIRED_FROM` of them, else Welch's over independent sides.

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

The machine's own steadiness while measuring (its pace, the sides' load, where their
threads ran, busy cores) is judged apart, in :mod:`parity.judge.steadiness`, and carried
as ``Speed.steadiness``: a check of it that fails makes the speed unreliable too.
"""

from __future__ import annotations

import statistics

from parity.judge.steadiness import judge_steadiness
from parity.model.bundle import Bundle, SideRuns, one_host, run_samples
from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.side import TimingSteps
from parity.model.verdict import ByRole, ComplianceCheck, Interval, Speed
from parity.stats import PredictionInterval, Processes, Sided, prediction_interval, ratio_ci

COMPLIANCE_LEVEL = 0.98
#: (key of the run in ``SideRuns.compliance``, the check's code, its sidedness)
COMPLIANCE_RUNS: tuple[tuple[str, str, Sided], ...] = (
    ("reseeded", "speed.reseeded", "two-sided"),
    ("same-input", "speed.same-input", "lower"),
)


def processes(side: SideRuns, name: str) -> Processes | None:
    """A side's successful processes, each reduced to its median steady step, with the
    round each ran in (its repeat index)."""
    samples = run_samples(side.repeats)
    ran = [(b.manifest.repeat, s) for b, s in zip(side.repeats, samples, strict=True) if s]
    if not ran:
        return None
    rounds = [k for k, _ in ran]
    known = rounds if len(set(rounds)) == len(rounds) else None
    return Processes.from_steps([s for _, s in ran], name, rounds=known)


def one_run(a: SideRuns, b: SideRuns) -> bool:
    """Whether the two sides ran in one comparison's rounds on one machine, a process of
    each back to back, so that both processes of a round shared the machine's pace: each
    side's ``side.json`` records the same end of the same rounds (a side from another
    comparison, or a lone bundle, has another or none), and both ran here or on cluster
    nodes of one host."""
    if a.info is None or b.info is None or not a.info.stop.order:
        return False
    return a.info.stop == b.info.stop and one_host((*a.repeats, *b.repeats))


def side_step_time(side: SideRuns) -> float | None:
    """A side's step time: the geometric mean of its processes' median steady steps."""
    found = processes(side, "a side")
    return found.centre if found is not None else None


def judge_speed(a: SideRuns, b: SideRuns) -> Speed | None:
    baseline, target = processes(a, "baseline"), processes(b, "target")
    if baseline is None or target is None:
        return None
    ci = ratio_ci(baseline, target, paired=one_run(a, b))
    runs = compliance(b, target, baseline)
    steadiness, ci = judge_steadiness(a, b, ci)  # different loads: the interval widened
    checks = [*runs, *(steadiness.checks if steadiness is not None else ())]
    info = b.info or a.info
    return Speed(
        reliable=not any(c.passed is False for c in checks),
        unreliable_because=tuple(c.name for c in checks if c.passed is False),
        baseline_median_s=baseline.centre,
        target_median_s=target.centre,
        ratio=ci.ratio,
        speedup=ci.speedup,
        interval=Interval(
            low=ci.low,
            high=ci.high,
            confidence=ci.confidence,
            half_width_rel=ci.half_width_rel,
            method=ci.method,
            df=ci.df,
            provisional=ci.provisional,
            spread=ByRole(baseline=ci.baseline_spread, target=ci.target_spread),
            rounds_spread=ci.rounds_spread,
            rounds_autocorrelation=ci.rounds_autocorrelation,
        ),
        verdict=ci.verdict,
        repeats=ByRole(baseline=baseline.count, target=target.count),
        stop=info.stop if info is not None else None,
        note=ci.note,
        throughput=ByRole(
            baseline=a.first.metrics.throughput if a.first.metrics else None,
            target=b.first.metrics.throughput if b.first.metrics else None,
        ),
        compliance=tuple(runs),
        timing=_timing(a, b),
        steadiness=steadiness,
        findings=_findings(checks),
    )


def _findings(checks: list[ComplianceCheck]) -> tuple[Finding, ...]:
    """A check on the speed claim that failed: the speed is then unreliable."""
    failed: list[Json] = [c.name for c in checks if c.passed is False]
    if not failed:
        return ()
    return (Finding(code="speed.unreliable", severity="blocks", figures={"failed": failed}),)


def _timing(a: SideRuns, b: SideRuns) -> ByRole[TimingSteps | None] | None:
    """The steps each side's timing processes ran, where any ran fewer than the workload's
    (from ``side.json``)."""
    found = ByRole(
        baseline=a.info.timing if a.info is not None else None,
        target=b.info.timing if b.info is not None else None,
    )
    return None if found.baseline is None and found.target is None else found


def compliance(
    runs: SideRuns, target: Processes, baseline: Processes | None = None
) -> list[ComplianceCheck]:
    """The target's compliance runs, each judged against process-to-process variation."""
    return [
        _check(name, key, bundle, target, baseline, sided)
        for key, name, sided in COMPLIANCE_RUNS
        if (bundle := runs.compliance.get(key)) is not None
    ]


def noise_interval(
    target: Processes, baseline: Processes | None, sided: Sided
) -> PredictionInterval | None:
    """Where one more target process's median step falls, as a ratio to the target's step
    time, by process-to-process variation alone (None: not estimable)."""
    return prediction_interval(target, other=baseline, level=COMPLIANCE_LEVEL, sided=sided)


def _check(
    name: str,
    run: str,
    bundle: Bundle,
    target: Processes,
    baseline: Processes | None,
    sided: Sided,
) -> ComplianceCheck:
    """The compliance run ``run`` (its key) as the check ``name``: its median step over
    the target's, within what process-to-process variation explains or not."""
    if not bundle.ok:
        failed = Finding(
            code="speed.run-failed",
            severity="blocks",
            figures={"run": run, "reason": bundle.manifest.reason},
        )
        return ComplianceCheck(name=name, passed=False, finding=failed)
    samples = list(bundle.metrics.steady_samples) if bundle.metrics is not None else []
    if not samples:
        empty = Finding(code="speed.run-no-samples", severity="blocks", figures={"run": run})
        return ComplianceCheck(name=name, passed=False, finding=empty)
    ratio = statistics.median(samples) / target.centre
    pi = noise_interval(target, baseline, sided)
    if pi is None:
        unjudged = Finding(
            code="speed.run-not-judged", severity="context", figures={"run": run, "ratio": ratio}
        )
        return ComplianceCheck(name=name, passed=None, ratio=ratio, finding=unjudged)
    passed = pi.contains(ratio)
    judged = Finding(
        code="speed.run-judged",
        severity="context" if passed else "blocks",
        figures={
            "run": run,
            "ratio": ratio,
            "passed": passed,
            "sided": sided,
            "low": pi.low,
            "high": pi.high,
            "level": pi.level,
            "processes": pi.processes,
        },
    )
    return ComplianceCheck(
        name=name,
        passed=passed,
        ratio=ratio,
        low=pi.low,
        high=pi.high,
        level=pi.level,
        finding=judged,
    )
