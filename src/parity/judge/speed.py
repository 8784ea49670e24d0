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

A third check is there only where the machine's pace changed while measuring (``pace``,
:func:`parity.stats.pace.any_change`): both sides' processes shifted together at one
point of the run order, or the ratio itself moved there (``ratio_change``: the machine
changed how one side runs and not the other). It fails where the ratio before and after
differ beyond their intervals, which makes the speed unreliable: one ratio does not
describe such a run. Where the processes' thread handoff figures show the host placing
the threads two ways, or threads that stalled each other, and the steps moved with them,
the section says so with each one's ratio (``placements``, :mod:`parity.judge.placements`).
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from parity.judge.load import load_check, waited_finding
from parity.judge.placements import (
    handoffs,
    placements_finding,
    stalled_count,
    thread_placements,
)
from parity.model.bundle import Bundle, SideRuns, one_host, run_samples, threaded_on_host
from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.side import Interference, TimingSteps
from parity.model.spec import HOST_COMPUTE
from parity.model.verdict import ByRole, ComplianceCheck, Interval, Speed, ThreadPlacements
from parity.stats import PredictionInterval, Processes, Sided, prediction_interval, ratio_ci
from parity.stats.handoff import Process
from parity.stats.pace import PaceChange, any_change

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
    checks = compliance(b, target, baseline)
    loaded, ci = load_check(a, b, ci)  # the sides under different loads: widened, and said
    if loaded is not None:
        checks.append(loaded)
    figures = [*handoffs(a, "baseline"), *handoffs(b, "target")]
    two_ways = handoff(a, b, figures)
    held = pace(a, b, paired=ci.rounds_spread is not None, seen=two_ways is not None)
    if held is not None:
        checks.append(held)
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
        compliance=tuple(checks),
        timing=_timing(a, b),
        placements=two_ways,
        findings=_findings(a, b, ci.half_width_rel, figures, two_ways, checks),
    )


def _findings(
    a: SideRuns,
    b: SideRuns,
    half_width_rel: float,
    figures: list[Process],
    two_ways: ThreadPlacements | None,
    checks: list[ComplianceCheck],
) -> tuple[Finding, ...]:
    """What changes how to read the ratio: a check on the speed claim that failed (it is
    then unreliable), busy cores, threads placed two ways."""
    failed: list[Json] = [c.name for c in checks if c.passed is False]
    info = b.info or a.info
    busy = info.stop.interference if info and info.stop else None
    stalled = (stalled_count([h for _, _, h in figures]), len(figures))
    found = [
        Finding(code="speed.unreliable", severity="blocks", figures={"failed": failed})
        if failed
        else None,
        contention(a.first, b.first, busy, half_width_rel, stalled),
        placements_finding(two_ways) if two_ways is not None else None,
        waited_finding(a, b),
    ]
    return tuple(f for f in found if f is not None)


def contention(
    baseline: Bundle,
    target: Bundle,
    busy: Interference | None,
    half_width_rel: float | None = None,
    stalled: tuple[int, int] = (0, 0),
) -> Finding | None:
    """Other processes held the cores while a side on them ran several intra-op threads
    (each side's run ``baseline``, ``target``; ``half_width_rel``: the interval it widened,
    None while measuring; ``stalled``: processes whose threads stalled each other, of
    how many). Such threads meet at every parallel region, and one descheduled stalls the
    rest, so a process's time follows when the machine's other work took its cores. None
    where the machine was quiet or no host side ran more than one thread on it (a side on
    a cluster node ran on that node's cores)."""
    if busy is None or not busy.busy:
        return None
    threads: dict[str, Json] = dict(threaded_on_host({"baseline": baseline, "target": target}))
    if not threads:
        return None
    single = [
        replace(s, threads=1) if s.device in HOST_COMPUTE else s
        for s in (baseline.manifest.side, target.manifest.side)
    ]
    return Finding(
        code="speed.contention",
        severity="reading",
        figures={
            "share": busy.share,
            "cores": busy.cores,
            "threads": threads,
            "half_width_rel": half_width_rel,
            "stalled": stalled[0],
            "processes": stalled[1],
            "single_baseline": str(single[0]),
            "single_target": str(single[1]),
        },
    )


def handoff(a: SideRuns, b: SideRuns, processes: list[Process]) -> ThreadPlacements | None:
    """Where the host placed the sides' threads two ways while measuring and a side's
    steps moved with it (``stats.handoff``): each placement and its ratio. None where the
    processes' handoff figures do not part in two, or nothing moved with them, or the
    sides ran different thread counts (their figures are not one scale), or a side ran
    on a cluster node. ``processes``: both sides' (``placements.handoffs``)."""
    if _placed(a.first) or _placed(b.first) or _threads(a.first) != _threads(b.first):
        return None
    return thread_placements(processes)


def _placed(bundle: Bundle) -> bool:
    """Whether the run was on a cluster node (``--cluster``): the load measured on this
    machine is not its node's."""
    return bundle.placement is not None


def _threads(bundle: Bundle) -> int | None:
    """The intra-op threads a run's steps had (``torch.get_num_threads``)."""
    resolved = bundle.manifest.resolved
    return resolved.threads if resolved is not None else None


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
        _check(name, what, bundle, target, baseline, sided)
        for key, name, sided, what in COMPLIANCE_RUNS
        if (bundle := runs.compliance.get(key)) is not None
    ]


#: the check a change of the machine's pace while measuring fails (``pace``)
PACE_CHECK = "machine pace held while measuring"


def run_order(a: SideRuns, b: SideRuns) -> list[tuple[str, float]]:
    """``(role, steady median in seconds)`` of each measured process, in the order the
    processes ran (``Stop.order``); empty where the order is not recorded."""
    info = b.info or a.info
    if info is None or info.stop is None:
        return []
    medians: dict[str, float] = {}
    for role, side in (("baseline", a), ("target", b)):
        for bundle in side.repeats:
            steady = bundle.metrics.steady_samples if bundle.ok and bundle.metrics else ()
            if steady:
                medians[f"{role} {bundle.name}"] = statistics.median(steady)
    return [(label.split()[0], medians[label]) for label in info.stop.order if label in medians]


def pace(
    a: SideRuns, b: SideRuns, *, paired: bool = False, seen: bool = False
) -> ComplianceCheck | None:
    """Where both sides' processes shifted together at one point of the run order, or the
    ratio itself moved there (``stats.pace.any_change``): failed where the ratio before and
    after differ beyond their intervals (one ratio does not describe the run), passed where
    it held; None where the pace held, or the sides did not share this machine's clock and
    order. ``paired``: the
    speed interval pairs each round's processes (they shared the pace); ``seen``: the
    processes' thread handoff figures showed the host placing the threads two ways
    (:func:`handoff`)."""
    if _placed(a.first) or _placed(b.first):
        return None
    order = run_order(a, b)
    change = any_change(order)
    if change is None:
        return None
    parts = []
    for part in (order[: change.at], order[change.at :]):
        by = {r: tuple(m for role, m in part if role == r) for r in ("baseline", "target")}
        parts.append(ratio_ci(Processes(medians=by["baseline"]), Processes(medians=by["target"])))
    before, after = parts
    held = before.low <= after.high and after.low <= before.high
    said = (
        f"{_what_changed(change, seen)}; the ratio was {before.ratio:.3f} "
        f"[{before.low:.3f}, {before.high:.3f}] before and {after.ratio:.3f} "
        f"[{after.low:.3f}, {after.high:.3f}] after"
    )
    widened = (
        "each round's two processes ran at one pace, which the paired interval compares"
        if paired
        else "the interval over the whole run is wider for the change"
    )
    tail = (
        f"; it held, and {widened}"
        if held
        else "; one ratio does not describe this run: measure again on a steadier machine, "
        "or from the part of the run whose pace is the one you deploy on"
    )
    return ComplianceCheck(name=PACE_CHECK, passed=held, detail=said + tail)


def _what_changed(change: PaceChange, seen: bool = False) -> str:
    why = (
        "the processes' thread handoff figures show the host placing their cores two ways"
        if seen
        else "a virtual machine's host can do that with no other process here to show it"
    )
    moved = (
        f"after {change.before} processes a side: the baseline's step time went "
        f"{change.baseline_shift:.2f}x and the target's {change.target_shift:.2f}x at once"
    )
    if change.shared:
        return f"the machine's pace changed {moved} ({why})"
    return (
        f"the ratio changed {moved}: the machine changed how one side runs and not the "
        f"other ({why}; so can a side's own state that outlives its processes)"
    )


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
) -> ComplianceCheck:
    if not bundle.ok:
        detail = f"the run failed: {bundle.manifest.reason}"
        return ComplianceCheck(name=name, passed=False, detail=detail)
    samples = list(bundle.metrics.steady_samples) if bundle.metrics is not None else []
    if not samples:
        return ComplianceCheck(name=name, passed=False, detail="no steady-state samples")
    ratio = statistics.median(samples) / target.centre
    seen = f"{what}'s median step was {ratio:.3f}x the target's"
    pi = noise_interval(target, baseline, sided)
    if pi is None:
        detail = (
            f"{seen}; not judged: with one process per side the variation between processes "
            "is unknown; run at least 2 repeats per side"
        )
        return ComplianceCheck(name=name, passed=None, ratio=ratio, detail=detail)
    passed = pi.contains(ratio)
    if sided == "lower":
        where, what_pi = ("not below" if passed else "below"), "lower prediction bound"
    else:
        where, what_pi = ("within" if passed else "outside"), "prediction interval"
    return ComplianceCheck(
        name=name,
        passed=passed,
        ratio=ratio,
        low=pi.low,
        high=pi.high,
        level=pi.level,
        detail=f"{seen}, {where} the {pi.bounds} that process-to-process variation explains "
        f"({pi.level * 100:g}% {what_pi} from the {pi.processes} processes of both sides)",
    )
