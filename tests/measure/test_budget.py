"""The budget's one cost model: a process costed before the rounds (the estimate), during
them (the next process, from one that ran) and after them (the account and the
``--budget`` a note asks for) agree on the same inputs, and one test decides what fits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from parity.measure import budget
from parity.measure import estimate as estimates
from parity.measure.orchestrate import Tally
from parity.model.estimate import StepCost
from parity.model.side import MeasurePlan
from parity.model.spec import SideSpec
from parity.stats import MIN_PROCESSES, RatioCI, should_stop

LOAD_S, STEP_S, STEPS = 0.3, 0.02, 40
CPU = SideSpec(device="cpu")


def costed(budget_s: float = 30.0) -> estimates.Costed:
    cost = StepCost(step_s=STEP_S, load_s=LOAD_S, dtype_ratio={"float64": 2.0}, method="test")
    return estimates.Costed(
        cost=cost,
        steps=STEPS,
        baseline=CPU,
        target=CPU,
        expected=None,
        plan=MeasurePlan(budget_s=budget_s, compliance=False),
    )


def ran(steps: int) -> SimpleNamespace:
    """A timing process's bundle, as the worker timed it: the load and ``steps`` steps of
    ``STEP_S`` (its first step, the rest steady), nothing for the interpreter's start."""
    phases = SimpleNamespace(
        start_import_s=0.0,
        load_s=LOAD_S,
        first_step_s=STEP_S,
        warmup_s=0.0,
        warmup_steps=0,
        steady_s=(steps - 1) * STEP_S,
        steady_steps=steps - 1,
    )
    return SimpleNamespace(ok=True, metrics=SimpleNamespace(phases=phases))


def test_a_process_costs_the_same_before_during_and_after_the_rounds() -> None:
    n = estimates.timing_steps(STEPS)
    process = budget.process_s(LOAD_S, n, STEP_S)
    assert process == pytest.approx(budget.OVERHEAD_S + LOAD_S + n * STEP_S)
    # before: the estimate's timing processes (two a side after the quality run)
    est = estimates.plan(costed())
    (timing,) = [p for p in est.phases if p.name.startswith("baseline timing processes")]
    assert timing.seconds == pytest.approx((MIN_PROCESSES - 1) * process)
    # during: a process that took what the estimate said is costed again as the same
    # process, with the margin on what ran
    bundle = ran(n)
    assert budget.plain_run_s(bundle) + budget.OVERHEAD_S == pytest.approx(process)  # type: ignore[arg-type, operator]
    again = budget.COST_MARGIN * (process - budget.OVERHEAD_S) + budget.OVERHEAD_S
    assert budget.rerun_s(bundle) == pytest.approx(again)  # type: ignore[arg-type]
    tally = Tally(
        done={"baseline": [bundle], "target": [bundle]},  # type: ignore[list-item]
        rounds=1,
        elapsed_s=10.0,
        round_s=(10.0,),
        run_s={"baseline": (5.0,), "target": (5.0,)},
    )
    assert tally.next_run_s("target") == pytest.approx(again)
    assert tally.next_round_s == pytest.approx(2 * again)
    # after: the --budget the estimate asks for and the one a note during the rounds asks
    # for are one figure for one need
    assert est.full_budget_s == budget.holding(est.planned_s)


def _ci() -> RatioCI:
    return RatioCI(
        ratio=0.5,
        low=0.4,
        high=0.6,
        confidence=0.95,
        method="Welch t on log per-process medians",
        df=4.0,
        baseline_processes=3,
        target_processes=3,
        baseline_spread=0.01,
        target_spread=0.01,
        provisional=False,
        verdict="faster",
    )


@pytest.mark.parametrize("under", [0.0, 0.01])
def test_what_fits_is_one_test_before_during_and_after(under: float) -> None:
    planned = estimates.plan(costed()).planned_s
    budget_s = planned - under  # exactly the plan, or a hundredth of a second short
    fits = budget.fits(0.0, planned, budget_s)
    assert fits == (under == 0.0)
    # before: the estimate keeps every phase only where the plan fits
    est = estimates.plan(costed(budget_s))
    assert (not est.cuts and est.processes == MIN_PROCESSES) == fits
    # after: the notes call the plan over its budget only where it does not fit
    assert any("processes a side come first" in n for n in estimates.notes(est)) == (
        not fits and est.processes >= MIN_PROCESSES and est.planned_s > budget_s
    )
    # during: the rounds stop on the budget where the next round, after what was spent,
    # does not fit (the same sums: spent + next + kept)
    spent, kept = planned / 2, 1.0
    stop = should_stop(
        _ci(),
        precision=0.01,
        elapsed_s=spent,
        budget_s=budget_s,
        repeats=3,
        next_repeat_s=planned / 2 - kept,
        reserve_s=kept,
    )
    assert (stop is not None and stop.reason == "budget") == (not fits)
