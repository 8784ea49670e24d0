"""When a comparison's rounds stop, and how long its timing processes run.

``decide_stop`` (and ``adaptive_stop``, its form for ``Orchestrator.rounds``) stops the
rounds on the speed interval, the time budget or a repeat cap; ``timing_plan`` sizes the
timing processes after each side's quality run (``size_timing``) and says where the
budget cannot hold the rounds that come first. Split from ``parity.measure.orchestrate``, which
runs what these decide.
"""

from __future__ import annotations

import logging
import math
import statistics
from dataclasses import replace

from parity.measure import budget
from parity.measure.orchestrate import AfterFirst, Decide, Orchestrator, Tally
from parity.model.bundle import Bundle, one_host, run_samples, threaded_on_host
from parity.model.job import StepCut
from parity.model.side import DECISIVE, MeasurePlan, Stop, TimingSteps
from parity.model.spec import HOST_COMPUTE
from parity.model.verdict import ROLES, Role

log = logging.getLogger("parity")

#: each side's steady step times, one list per round in round order (empty: that round's
#: process gave none)
Samples = dict[Role, list[list[float]]]


def first_rounds(plan: MeasurePlan) -> int:
    """Rounds run whatever the budget says: enough for an interval that is not
    provisional (``stats.MIN_PROCESSES`` a side), within the repeat cap and the
    estimate's plan where it fitted fewer (``MeasurePlan.planned_rounds``); a
    ``min_repeats`` above it is bought only while the budget holds it."""
    from parity.stats import MIN_PROCESSES

    return min(MIN_PROCESSES, plan.max_repeats, plan.planned_rounds or MIN_PROCESSES)


def decide_stop(
    plan: MeasurePlan,
    samples: Samples,
    rounds: int,
    elapsed: float,
    failed: bool,
    *,
    next_round_s: float | None = None,
    reserve_s: float = 0.0,
    asked: bool = True,
    paired: bool = True,
) -> Stop | None:
    """After ``rounds`` rounds: stop (and why), or None to run another round. ``samples``
    are each side's steady step times, one list per process; another round costs
    ``next_round_s`` and ``reserve_s`` must be left for the runs after the rounds.
    ``asked``: ``plan.repeats`` is the user's (else a mode's default, never called asked).
    The rounds ran a process of each side back to back, so with ``paired`` (they shared one
    host) the interval pairs them (``stats.ratio_ci``) where both sides' processes gave
    steps in the same rounds: the interval the verdict states (``judge.speed``)."""
    from parity.stats import Processes, ratio_ci, should_stop

    if failed:
        return Stop(
            reason="failure",
            message=f"a side failed in round {rounds}: no further repeats were run",
        )
    if plan.repeats is not None:
        if rounds >= plan.repeats:
            why = "as asked" if asked else "the default here (--repeats N for more)"
            return Stop(reason="repeats", message=f"{rounds} repeat(s) per side, {why}")
        return None
    usable = {role: [s for s in runs if s] for role, runs in samples.items()}
    ran = {role: [k for k, s in enumerate(runs) if s] for role, runs in samples.items()}
    if not all(usable.values()):
        return Stop(
            reason="no_samples",
            message="no steady-state samples: raise --steps so a run has more than one",
        )
    if rounds < first_rounds(plan):  # three processes a side first, the budget or not
        return None
    ci = ratio_ci(
        Processes.from_steps(usable["baseline"], "baseline", rounds=ran["baseline"]),
        Processes.from_steps(usable["target"], "target", rounds=ran["target"]),
        paired=paired,
    )
    decision = should_stop(
        ci,
        precision=plan.precision,
        elapsed_s=elapsed,
        budget_s=plan.budget_s,
        repeats=rounds,
        min_repeats=plan.min_repeats,
        max_repeats=plan.most_rounds,
        settle_from=plan.max_repeats,
        decisive=DECISIVE,
        next_repeat_s=next_round_s,
        reserve_s=reserve_s,
    )
    return None if decision is None else Stop(reason=decision.reason, message=decision.message)


def adaptive_stop(plan: MeasurePlan, *, runs_after: int = 0, asked: bool = True) -> Decide:
    """The stopping rule of a comparison's rounds on its bundles (see ``decide_stop``):
    the next round is costed as ``Tally.next_round_s`` says, and ``runs_after`` target
    runs (the compliance runs) are kept out of the budget at ``Tally.next_run_s`` each."""

    def decide(tally: Tally) -> Stop | None:
        failed = any(not b.ok for bundles in tally.done.values() for b in bundles)
        samples: Samples = {role: run_samples(bundles) for role, bundles in tally.done.items()}
        return decide_stop(
            plan,
            samples,
            tally.rounds,
            tally.elapsed_s,
            failed,
            next_round_s=tally.next_round_s,
            reserve_s=runs_after * tally.next_run_s("target"),
            asked=asked,
            paired=one_host(b for bundles in tally.done.values() for b in bundles),
        )

    return decide


def size_timing(bundle: Bundle, spread: float | None = None) -> TimingSteps | None:
    """The steps of a side's timing processes, from its quality run (its first process):
    ``stats.process_steps`` on its steady steps, warm-up and fixed cost per process, with
    the ``spread`` measured between processes where it is more than the one assumed."""
    from parity.stats import PRIOR_SPREAD, process_steps

    metrics = bundle.metrics
    if not bundle.ok or metrics is None or not metrics.steady_samples:
        return None
    p = metrics.phases
    fixed = (p.start_import_s or 0.0) + (p.load_s or 0.0) + p.first_step_s + p.warmup_s
    size = process_steps(
        metrics.steady_samples,
        warmup=p.warmup_steps,
        fixed_s=fixed + budget.OVERHEAD_S,
        workload_steps=len(metrics.step_samples_s),
        spread=max(PRIOR_SPREAD, spread or 0.0),
        measured=spread is not None and spread > PRIOR_SPREAD,
    )
    cut = step_cut(size.steps, size.warmup, statistics.median(metrics.steady_samples))
    return TimingSteps(
        steps=size.steps,
        warmup=size.warmup,
        steady=size.steady,
        workload_steps=size.workload_steps,
        reason=(
            f"{size.reason}; a process whose steps after the first pass {cut.after_s:.1f} s "
            f"ends once {cut.at_least} are in ({CUT_FACTOR:g}x theirs at the quality run's "
            f"pace, at least {CUT_FLOOR_S:g} s)"
        ),
        cut=cut,
    )


#: a timing process's steps end early once they take this many times what the quality
#: run's pace gives them (``step_cut``) ...
CUT_FACTOR = 4.0
#: ... and at least this long, so that a quick process never ends early by a hiccup
CUT_FLOOR_S = 1.0
#: steady steps a process that ends early still runs (its median is over these at least)
CUT_STEADY = 5


def step_cut(steps: int, warmup: int, step_s: float) -> StepCut:
    """Where a timing process of ``steps`` steps ends early: once its steps after the
    first (a compile or a cache filled is no stall) have taken :data:`CUT_FACTOR` times
    theirs at ``step_s`` (the quality run's median step), at least :data:`CUT_FLOOR_S`,
    and it has its first step, ``warmup`` and :data:`CUT_STEADY` steady ones. On a
    machine busier than its cores, an occasional process runs every step tens of times
    slower than the rest (its threads stall each other for its whole life), and one such
    process can take half the default budget by itself; cut, it runs the steps its median
    needs and no more."""
    return StepCut(
        after_s=float(max(CUT_FLOOR_S, CUT_FACTOR * (steps - 1) * step_s)),
        at_least=min(steps, 1 + warmup + CUT_STEADY),
    )


def timing_plan(
    orch: Orchestrator, plan: MeasurePlan, *, runs_after: int, shorten: bool
) -> AfterFirst:
    """What runs after the first round (each side's quality run): the timing processes'
    steps per side (``size_timing``; the workload's own unless ``shorten``), and a note,
    logged before they run, where the rounds that come first (three a side) and the
    ``runs_after`` target runs will not fit in the budget: the budget that would."""

    def after_first(done: dict[Role, list[Bundle]]) -> dict[Role, int | None]:
        spread = _spread(done)
        steps: dict[Role, int | None] = {}
        for role in ROLES:
            sized = size_timing(done[role][0], spread) if shorten and done[role] else None
            orch.timing[role] = sized
            shorter = sized is not None and sized.steps < sized.workload_steps
            steps[role] = sized.steps if sized is not None and shorter else None
        if spread is None:  # once, after the first round
            _warn_contention(orch, done)
        base, target = (
            budget.rerun_s(done[role][0], steps[role]) if done[role] else None for role in ROLES
        )
        if base is None or target is None or spread is not None:  # the note: once, first
            return steps
        rounds = first_rounds(plan) - 1
        spent, rest = orch.elapsed_s(), rounds * (base + target) + runs_after * target
        if plan.repeats is None and not budget.fits(spent, rest, plan.budget_s):
            need = spent + rest
            line = (
                f"{rounds + 1} processes a side need about {_duration(need)} of measuring "
                f"(the fp64 reference and the first processes took {spent:.0f} s), "
                f"more than --budget {plan.budget_s:g}: measuring them anyway; "
                f"--budget {budget.holding(need)} holds them"
            )
            orch.notes.append(line)
            log.warning("parity: %s", line)
        return steps

    return after_first


def _warn_contention(orch: Orchestrator, done: dict[Role, list[Bundle]]) -> None:
    """Said before the timing processes run, where other processes already hold the
    cores that several intra-op threads a side run on (the verdict says it again)."""
    if orch.watch is None or any(not done[role] for role in ROLES):
        return
    busy = orch.watch.finish()
    threaded = threaded_on_host({role: done[role][0] for role in ROLES})
    if busy is None or not busy.busy or not threaded:
        return
    counts = set(threaded.values())
    ran = (
        f"each side ran {counts.pop()}"
        if len(threaded) == 2 and len(counts) == 1
        else " and ".join(f"the {role} ran {n}" for role, n in threaded.items())
    )
    single = [
        replace(s, threads=1) if s.device in HOST_COMPUTE else s
        for s in (done[role][0].manifest.side for role in ROLES)
    ]
    log.warning(
        "parity: other processes held %.0f%% of the %d cores while %s intra-op threads on "
        "them: process times scatter, and measuring goes on; an idle machine narrows it, or "
        "one thread a side (--baseline %s --target %s: a one-thread comparison, not this one)",
        100 * busy.share,
        busy.cores,
        ran,
        *single,
    )


def _spread(done: dict[Role, list[Bundle]]) -> float | None:
    """The spread between processes (sd of log process medians, pooled over both sides,
    each about its own centre) once each side has two; None before."""
    import statistics

    logs = [
        [
            math.log(statistics.median(b.metrics.steady_samples))
            for b in bundles
            if b.ok and b.metrics is not None and b.metrics.steady_samples
        ]
        for bundles in done.values()
    ]
    if len(logs) < 2 or any(len(side) < 2 for side in logs):
        return None
    squares = sum(sum((x - statistics.fmean(side)) ** 2 for x in side) for side in logs)
    return math.sqrt(squares / sum(len(side) - 1 for side in logs))


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"
