"""How steady the machine was while a comparison measured, where that changes how to read
the speed ratio: the speed verdict's ``steadiness`` (``model.verdict.Steadiness``).

A shared or virtual machine moves step times in ways a dedicated accelerator host does
not, and every statistic that models it is here, so that a reader who measures on such a
host can skip this module (``judge.speed`` is about the ratio and its compliance runs):

- **load** (:func:`load_check`): other work held the cores more while one side's processes
  ran than while the other's did, and the steps followed the wait each process recorded
  (``Metrics.waited_share``, ``probes.waiting``): the ratio at equal load
  (``stats.load``) beside the plain one, and the interval widened to hold both. There only
  where the sides' mean waits move the ratio by ``MIN_SHIFT`` through a slope that the
  processes show (``SLOPE_T``); it fails (the speed unreliable) where the two intervals do
  not overlap.
- **pace** (:func:`pace`): both sides' processes shifted together at one point of the run
  order, or the ratio itself moved there (``stats.pace.any_change``); it fails where the
  ratio before and after differ beyond their intervals: one ratio does not describe the
  run.
- **thread placements** (:func:`thread_placements`): the processes' thread handoff figures
  (``probes.handoff``) part in two, the host placing the threads two ways or threads that
  stalled each other, and the steps moved with them (``stats.handoff``): each one's ratio.
- **busy cores** (:func:`contention`): other processes held the cores while a side on them
  ran several intra-op threads; and **waits** (:func:`waited_finding`): both sides waited
  for a core. A wait is time a quiet machine's step would not have taken, and two
  readings of the run take it off. A wait both sides pay alike each step adds the same
  seconds to a short step and a long one, which holds a ratio toward 1: the ratio with
  the wait every process paid taken off each step (a fixed cost) moves away from 1. A
  wait only ever adds time, so each process's fastest step is the one other work slowed
  least (why ``timeit`` reports the least of its runs): the ratio over the processes'
  fastest steps is the other reading, whichever side of the plain ratio it falls. The
  interval is widened to hold both, a reading, not a block: how much of a wait a step
  paid is not known (a step that also sleeps or waits on I/O overlaps some of it), so
  the plain ratio is what this run measured and the widened interval what a quiet
  machine may give. Where the sides waited differently and their steps followed,
  :func:`load_check` says so.

The judge says none of it in words: each is a check or a finding (a code and figures)
that ``parity.report.words`` says.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from parity.model.bundle import Bundle, SideRuns, threaded_on_host
from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.side import Interference
from parity.model.spec import HOST_COMPUTE
from parity.model.verdict import ComplianceCheck, Steadiness, ThreadPlacement, ThreadPlacements
from parity.stats import Processes, RatioCI, ratio_ci
from parity.stats.handoff import Process, two_placements
from parity.stats.load import load_adjusted
from parity.stats.pace import any_change
from parity.stats.processes import widened

#: the check a change of the machine's pace while measuring fails (:func:`pace`)
PACE_CHECK = "speed.pace"
#: the check the sides' processes under different loads fail (:func:`load_check`)
LOAD_CHECK = "speed.load"
#: the least move of the ratio, from the sides' different waits, that is said
MIN_SHIFT = 0.02
#: the slope of step time on wait must stand this many standard errors from nil
SLOPE_T = 2.0
#: a mean wait for a core (seconds a second, over both sides' processes) from which the
#: speed section says the steps paid it
WAITED = 0.10
#: a handoff this long (ns) is threads that stalled each other, whatever the others read:
#: an idle machine's are microseconds, a stalled process's a scheduler's time slice
STALLED_NS = 1e6


def judge_steadiness(a: SideRuns, b: SideRuns, ci: RatioCI) -> tuple[Steadiness | None, RatioCI]:
    """The machine's steadiness while the sides ``a`` (baseline) and ``b`` (target) were
    measured, and the speed interval ``ci`` as it leaves it (widened where the sides ran
    under different loads). None where there is nothing to say."""
    checks: list[ComplianceCheck] = []
    loaded, ci = load_check(a, b, ci)
    if loaded is not None:
        checks.append(loaded)
    waited, ci = waited_finding(a, b, ci)
    figures = [*handoffs(a, "baseline"), *handoffs(b, "target")]
    two_ways = handoff(a, b, figures)
    held = pace(a, b, paired=ci.rounds_spread is not None, seen=two_ways is not None)
    if held is not None:
        checks.append(held)
    info = b.info or a.info
    busy = info.stop.interference if info and info.stop else None
    stalled = (stalled_count([h for _, _, h in figures]), len(figures))
    found = [
        contention(a.first, b.first, busy, ci.half_width_rel, stalled),
        placements_finding(two_ways) if two_ways is not None else None,
        waited,
    ]
    findings = tuple(f for f in found if f is not None)
    if not checks and two_ways is None and not findings:
        return None, ci
    return Steadiness(checks=tuple(checks), placements=two_ways, findings=findings), ci


# -- busy cores and waits ---------------------------------------------------------------------


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


def waits(side: SideRuns) -> list[tuple[float, float]]:
    """Each successful process's median steady step and its wait per second."""
    return [(m, w) for m, w, _ in _waiting(side)]


def _waiting(side: SideRuns) -> list[tuple[float, float, int]]:
    """Each successful process's median steady step, its wait per second and its
    intra-op threads (1 where not recorded)."""
    found = []
    for b in side.repeats:
        m = b.metrics
        if b.ok and m is not None and m.steady_samples and m.waited_share is not None:
            threads = _threads(b) or 1
            found.append((statistics.median(m.steady_samples), m.waited_share, threads))
    return found


def waited_finding(a: SideRuns, b: SideRuns, ci: RatioCI) -> tuple[Finding | None, RatioCI]:
    """Both sides' processes waited for a core while stepping (other work on the
    machine): the ratio with the wait every process paid taken off each step, and over
    the processes' fastest steps (see the module), and ``ci`` widened to hold them, where
    each process ran one intra-op thread. None (and ``ci`` as it was) on a machine where
    they waited less than ``WAITED`` s a second, or where it is unknown."""
    found = {"baseline": _waiting(a), "target": _waiting(b)}
    if not found["baseline"] or not found["target"]:
        return None, ci
    means = {role: statistics.fmean(w for _, w, _ in runs) for role, runs in found.items()}
    if statistics.fmean(means.values()) < WAITED:
        return None, ci
    figures: dict[str, Json] = dict(means)
    if any(n > 1 for runs in found.values() for _, _, n in runs):
        # threads wait side by side and one descheduled stalls the rest: a process's
        # summed wait does not say what its steps paid (``contention`` says why)
        return Finding(code="speed.waited", severity="reading", figures=figures), ci
    # seconds of a step each process waited (one thread: at most the wall time)
    lost = {r: [(m, min(w, 1.0) * m) for m, w, _ in runs] for r, runs in found.items()}
    every = min(s for runs in lost.values() for _, s in runs)
    figures["plain"] = _ci(ci.ratio, ci.low, ci.high)
    wider = ci
    if every > 0 and all(m > every for runs in lost.values() for m, _ in runs):
        base, target = (Processes(medians=tuple(m - every for m, _ in lost[r])) for r in found)
        quiet = ratio_ci(base, target)
        # the wait taken off moves the ratio away from 1: its interval's far bound widens
        # the plain one, whose near bound is the run with no fixed wait at all
        wider = widened(wider, *((ci.low, quiet.high) if ci.ratio >= 1 else (quiet.low, ci.high)))
        figures["fixed_s"] = every
        figures["fixed"] = _ci(quiet.ratio, quiet.low, quiet.high)
    fastest = [_fastest(side) for side in (a, b)]
    if fastest[0] and fastest[1]:
        least = ratio_ci(Processes(medians=fastest[0]), Processes(medians=fastest[1]))
        wider = widened(wider, least.low, least.high)
        figures["fastest"] = _ci(least.ratio, least.low, least.high)
    figures["widened"] = wider.low < ci.low or wider.high > ci.high
    return Finding(code="speed.waited", severity="reading", figures=figures), wider


def _fastest(side: SideRuns) -> tuple[float, ...]:
    """Each successful process's fastest steady step (seconds)."""
    return tuple(
        min(b.metrics.steady_samples)
        for b in side.repeats
        if b.ok and b.metrics is not None and b.metrics.steady_samples
    )


def _ci(ratio: float, low: float, high: float) -> list[Json]:
    return [ratio, low, high]


def load_check(a: SideRuns, b: SideRuns, ci: RatioCI) -> tuple[ComplianceCheck | None, RatioCI]:
    """The sides' processes under one load (see the module), and the interval it leaves;
    ``(None, ci)`` where the sides' waits do not move the ratio."""
    adj = load_adjusted(waits(a), waits(b))
    if adj is None or abs(adj.slope_t) < SLOPE_T:
        return None, ci
    if abs(math.log(adj.shift)) < math.log1p(MIN_SHIFT):
        return None, ci
    held = adj.low <= ci.high and ci.low <= adj.high
    finding = Finding(
        code="speed.load-shift",
        severity="reading" if held else "blocks",
        figures={
            "more": "target" if adj.target_waited > adj.baseline_waited else "baseline",
            "target_waited": adj.target_waited,
            "baseline_waited": adj.baseline_waited,
            "slope_t": adj.slope_t,
            "equal_load": _ci(adj.ratio, adj.low, adj.high),
            "plain": _ci(ci.ratio, ci.low, ci.high),
            "held": held,
        },
    )
    check = ComplianceCheck(name=LOAD_CHECK, passed=held, finding=finding)
    return check, widened(ci, adj.low, adj.high)


# -- the machine's pace -----------------------------------------------------------------------


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
    order. ``paired``: the speed interval pairs each round's processes (they shared the
    pace); ``seen``: the processes' thread handoff figures showed the host placing the
    threads two ways (:func:`handoff`)."""
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
    finding = Finding(
        code="speed.pace-change",
        severity="reading" if held else "blocks",
        figures={
            "shared": change.shared,
            "processes": change.before,
            "baseline_shift": change.baseline_shift,
            "target_shift": change.target_shift,
            "placements_seen": seen,
            "before": _ci(before.ratio, before.low, before.high),
            "after": _ci(after.ratio, after.low, after.high),
            "held": held,
            "paired": paired,
        },
    )
    return ComplianceCheck(name=PACE_CHECK, passed=held, finding=finding)


# -- where the threads ran ---------------------------------------------------------------------


def stalled_count(figures: list[float]) -> int:
    """How many of the processes' handoff figures (ns) are threads that stalled."""
    return sum(f >= STALLED_NS for f in figures)


def handoffs(side: SideRuns, role: str) -> list[Process]:
    """Each measured process of a side that recorded a handoff figure: its role, median
    steady step and figure."""
    found: list[Process] = []
    for bundle in side.repeats:
        metrics = bundle.metrics if bundle.ok else None
        if metrics is None or metrics.thread_handoff_ns is None or not metrics.steady_samples:
            continue
        found.append((role, statistics.median(metrics.steady_samples), metrics.thread_handoff_ns))
    return found


def handoff(a: SideRuns, b: SideRuns, processes: list[Process]) -> ThreadPlacements | None:
    """Where the host placed the sides' threads two ways while measuring and a side's
    steps moved with it (``stats.handoff``): each placement and its ratio. None where the
    processes' handoff figures do not part in two, or nothing moved with them, or the
    sides ran different thread counts (their figures are not one scale), or a side ran
    on a cluster node. ``processes``: both sides' (:func:`handoffs`)."""
    if _placed(a.first) or _placed(b.first) or _threads(a.first) != _threads(b.first):
        return None
    return thread_placements(processes)


def thread_placements(processes: list[Process]) -> ThreadPlacements | None:
    """The two placements of ``processes`` (``(role, median step, handoff figure)``) and
    each one's ratio, in the verdict's terms; None where ``stats.handoff`` finds none."""
    found = two_placements(processes)
    if found is None:
        return None
    stalled = found.slow_ns >= STALLED_NS  # not cores the host placed apart
    return ThreadPlacements(
        quicker=_placement(found.quick, found.quick_ns, found.quick_ratio),
        slower=_placement(found.slow, found.slow_ns, found.slow_ratio),
        baseline_shift=found.baseline_shift,
        target_shift=found.target_shift,
        stalled=stalled,
    )


def placements_finding(p: ThreadPlacements) -> Finding:
    """The ``speed.thread-placements`` finding: each placement's processes, handoff figure
    and ratio, and how each side's steps moved between them."""

    def ci(x: ThreadPlacement) -> list[Json] | None:
        return None if x.ratio is None else [x.ratio, x.low, x.high]

    return Finding(
        code="speed.thread-placements",
        severity="reading",
        figures={
            "stalled": p.stalled,
            "quick": p.quicker.processes,
            "slow": p.slower.processes,
            "quick_ns": p.quicker.handoff_ns,
            "slow_ns": p.slower.handoff_ns,
            "baseline_shift": p.baseline_shift,
            "target_shift": p.target_shift,
            "quick_ratio": ci(p.quicker),
            "slow_ratio": ci(p.slower),
        },
    )


def _placement(processes: int, handoff_ns: float, ci: RatioCI | None) -> ThreadPlacement:
    if ci is None:
        return ThreadPlacement(processes=processes, handoff_ns=handoff_ns)
    return ThreadPlacement(
        processes=processes, handoff_ns=handoff_ns, ratio=ci.ratio, low=ci.low, high=ci.high
    )


def _placed(bundle: Bundle) -> bool:
    """Whether the run was on a cluster node (``--cluster``): the load measured on this
    machine is not its node's."""
    return bundle.placement is not None


def _threads(bundle: Bundle) -> int | None:
    """The intra-op threads a run's steps had (``torch.get_num_threads``)."""
    resolved = bundle.manifest.resolved
    return resolved.threads if resolved is not None else None
