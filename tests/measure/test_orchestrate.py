"""The orchestrator's adaptive stop and its budget, on given samples (no worker processes)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from parity.measure.budget import COST_MARGIN
from parity.measure.budget import OVERHEAD_S as RUN_OVERHEAD_S
from parity.measure.orchestrate import Orchestrator, Tally
from parity.measure.stopping import Samples, adaptive_stop
from parity.measure.stopping import decide_stop as _decide
from parity.model.side import MeasurePlan as Plan
from parity.model.side import Stop
from parity.model.spec import parse_side


def _samples(rounds: int, seed: int = 0) -> Samples:
    """Steady steps per role and round: 1% step noise, processes 0.1% apart (precise)."""
    rng = np.random.default_rng(seed)
    return {
        role: [
            list(scale * np.exp(rng.normal(0, 0.001) + rng.normal(0, 0.01, 100)))
            for _ in range(rounds)
        ]
        for role, scale in (("baseline", 1e-3), ("target", 1.2e-3))
    }


def test_a_precise_but_provisional_interval_does_not_stop_measuring() -> None:
    plan = Plan(precision=0.05, budget_s=100.0)
    assert _decide(plan, _samples(2), 2, elapsed=10.0, failed=False) is None
    stop = _decide(plan, _samples(3), 3, elapsed=15.0, failed=False)
    assert stop is not None and stop.reason == "precision"


def test_the_budget_does_not_end_a_provisional_interval() -> None:
    """Three processes a side come first (issue 28): two rounds over the budget go on."""
    plan = Plan(precision=0.05, budget_s=12.0)
    assert _decide(plan, _samples(2), 2, elapsed=20.0, failed=False, next_round_s=5.0) is None
    stop = _decide(plan, _samples(3), 3, elapsed=25.0, failed=False, next_round_s=5.0)
    assert stop is not None and stop.reason in ("budget", "precision")
    # a repeat cap below three is the user's: it still ends a provisional interval
    capped = Plan(precision=0.05, budget_s=12.0, min_repeats=1, max_repeats=2)
    stop = _decide(capped, _samples(2), 2, elapsed=20.0, failed=False)
    assert stop is not None and stop.reason == "max_repeats"


def test_rounds_the_estimate_planned_come_first_and_more_run_while_they_fit() -> None:
    """Fewer than three a side fitted the estimate (``planned_rounds``): those run whatever
    the budget says, and the rounds after them run while the rounds as measured fit it
    (an estimate on a loaded machine read a step 30x what the runs took)."""
    plan = Plan(precision=0.001, budget_s=30.0, planned_rounds=1)
    # one round took 3 s, the next is costed at 1 s: the budget holds it
    assert _decide(plan, _samples(1), 1, elapsed=3.0, failed=False, next_round_s=1.0) is None
    assert _decide(plan, _samples(2), 2, elapsed=4.0, failed=False, next_round_s=1.0) is None
    # the estimate was right: the next round does not fit, and the interval stays provisional
    stop = _decide(plan, _samples(1), 1, elapsed=25.0, failed=False, next_round_s=10.0)
    assert stop is not None and stop.reason == "budget" and "provisional" in stop.message
    # three rounds first where it planned none fewer
    assert (
        _decide(
            Plan(precision=0.001, budget_s=30.0), _samples(1), 1, 25.0, False, next_round_s=10.0
        )
        is None
    )
    with pytest.raises(ValueError, match="planned_rounds"):
        Plan(planned_rounds=0)


def test_fixed_repeats_and_failures_end_as_before() -> None:
    assert _decide(Plan(repeats=2), _samples(2), 2, elapsed=1.0, failed=False) == Stop(
        reason="repeats", message="2 repeat(s) per side, as asked"
    )
    default = _decide(Plan(repeats=1), _samples(1), 1, 1.0, False, asked=False)
    assert default is not None and "as asked" not in default.message
    assert "--repeats N" in default.message
    failure = _decide(Plan(), _samples(1), 1, elapsed=1.0, failed=True)
    assert failure is not None and failure.reason == "failure"


def test_a_round_that_would_not_fit_with_the_runs_after_is_not_started() -> None:
    plan = Plan(precision=0.001, budget_s=60.0)
    # 3 rounds took 30 s; the next would take 12 s and the compliance runs 20 s more
    assert _decide(plan, _samples(3), 3, elapsed=30.0, failed=False, next_round_s=12.0) is None
    stop = _decide(
        plan, _samples(3), 3, elapsed=30.0, failed=False, next_round_s=12.0, reserve_s=20.0
    )
    assert stop is not None and stop.reason == "budget"
    assert "20 s kept for the runs after" in stop.message


def test_the_budget_wins_over_a_minimum_above_three() -> None:
    plan = Plan(precision=0.05, budget_s=10.0, min_repeats=4)
    assert _decide(plan, _samples(1), 1, elapsed=8.0, failed=False, next_round_s=4.0) is None
    stop = _decide(plan, _samples(3), 3, elapsed=8.0, failed=False, next_round_s=4.0)
    assert stop is not None and stop.reason == "budget"
    assert "fewer than the 4 wanted" in stop.message


def _drifting(rounds: int, seed: int = 0) -> Samples:
    """Steady steps per role and round: a pace shared by each round's two processes that
    wanders 8% from round to round, each process 1% off it."""
    rng = np.random.default_rng(seed)
    pace = np.exp(np.cumsum(rng.normal(0, 0.08, rounds)))
    return {
        role: [
            list(scale * p * np.exp(rng.normal(0, 0.01) + rng.normal(0, 0.01, 50))) for p in pace
        ]
        for role, scale in (("baseline", 1e-3), ("target", 1.2e-3))
    }


def test_the_rounds_stop_on_the_paired_interval_the_verdict_states() -> None:
    """The rounds ran a process of each side back to back: the stopping rule reads the
    interval that pairs them, which a shared drift does not widen."""
    plan = Plan(precision=0.03, budget_s=100.0)
    samples = _drifting(10)
    stop = _decide(plan, samples, 10, elapsed=10.0, failed=False)
    assert stop is not None and stop.reason == "precision", stop
    # sides on two hosts shared no pace: independent sides, as the verdict takes them
    assert _decide(plan, samples, 10, elapsed=10.0, failed=False, paired=False) is None
    # a round whose baseline gave no steps leaves the sides' rounds unmatched: independent
    # sides, whose spread holds the drift, and measuring goes on
    samples["baseline"][4] = []
    assert _decide(plan, samples, 10, elapsed=10.0, failed=False) is None


class _Sleeping(Orchestrator):
    """Runs nothing: each job sleeps ``cost`` seconds and yields noisy steady samples."""

    cost = 0.1

    def run(self, job: Any, path: Path, *, label: str, hook: Any = None) -> Any:
        time.sleep(self.cost)
        rng = np.random.default_rng(len(label) + int(time.monotonic() * 1e6) % 1000)
        samples = list(1e-3 * np.exp(rng.normal(rng.normal(0, 0.3), 0.01, 50)))
        phases = SimpleNamespace(start_import_s=None)  # no phases: costed by wall time
        return SimpleNamespace(
            ok=True,
            metrics=SimpleNamespace(steady_samples=samples, phases=phases),
            placement=None,  # run on this machine
        )


def test_rounds_keep_the_compliance_runs_inside_the_budget(tmp_path: Path) -> None:
    plan = Plan(precision=0.001, budget_s=1.5)
    orch = _Sleeping(out=tmp_path)
    for role in ("baseline", "target"):
        (tmp_path / role).mkdir()
    orch.start_budget()
    stop = orch.rounds(lambda role, k: None, plan, adaptive_stop(plan, runs_after=2))  # type: ignore[arg-type,return-value]
    assert stop.reason == "budget", stop.message
    assert stop.elapsed_s is not None
    # what the rounds used leaves room for two more target runs (sleep jitter aside)
    assert stop.elapsed_s + 2 * _Sleeping.cost <= plan.budget_s + 0.15
    time.sleep(2 * _Sleeping.cost)  # the compliance runs
    final = orch.finish(stop, plan)
    assert final.spent_s is not None and final.spent_s <= plan.budget_s + 0.15
    assert final.setup_s is not None and final.setup_s >= 0
    side = json.loads((tmp_path / "target" / "side.json").read_text())
    assert side["stop"]["spent_s"] == pytest.approx(final.spent_s)
    if Path("/proc/stat").is_file():
        assert side["stop"]["interference"]["cores"] == os.cpu_count()


def test_each_job_is_made_once_the_runs_before_it_landed(tmp_path: Path) -> None:
    """The target's quality run hands over the baseline's generated tokens (teacher
    forcing, ``runs.forced_tokens``): its job is made once the baseline's run of the same
    round is in ``measured``, and so is every job after a run of its round."""
    plan = Plan(repeats=2)
    orch = _Sleeping(out=tmp_path)
    seen: dict[tuple[str, int], dict[str, int]] = {}

    def make_job(role: str, k: int) -> Any:
        seen[(role, k)] = {r: len(runs) for r, runs in orch.measured.items()}
        return None  # _Sleeping runs nothing

    orch.rounds(make_job, plan, adaptive_stop(plan))  # type: ignore[arg-type]
    # ABBA: baseline, target; then target, baseline
    assert seen == {
        ("baseline", 0): {"baseline": 0, "target": 0},
        ("target", 0): {"baseline": 1, "target": 0},
        ("target", 1): {"baseline": 1, "target": 1},
        ("baseline", 1): {"baseline": 1, "target": 2},
    }


def test_the_next_round_is_costed_without_the_first_round_s_extras() -> None:
    tally = Tally(
        done={},
        rounds=4,
        elapsed_s=8.0,
        round_s=(4.6, 1.0, 1.1, 0.9),
        run_s={"baseline": (2.0, 0.4, 0.5, 0.4), "target": (2.6, 0.6, 0.6, 0.5)},
    )
    assert tally.next_round_s == pytest.approx(1.2 * 1.0)
    assert tally.next_run_s("target") == pytest.approx(1.2 * 0.6)
    slower = replace(tally, round_s=(*tally.round_s, 3.0))  # the machine just got busy
    assert slower.next_round_s == 3.0


def _first(start: float, steps: float) -> SimpleNamespace:
    phases = SimpleNamespace(
        start_import_s=start, load_s=0.1, first_step_s=0.2, warmup_s=0.0, steady_s=steps
    )
    return SimpleNamespace(ok=True, metrics=SimpleNamespace(phases=phases))


def test_after_the_first_round_the_next_is_costed_from_its_plain_phases() -> None:
    """The first round also ran the numerics probe and the op scan: its wall time (6 s a
    run here) would keep a 30 s budget from a second round, so the next round is costed
    from each first run's start, load and steps (1.3 s), with the margin and overhead."""
    tally = Tally(
        done={"baseline": [_first(0.05, 0.95)], "target": [_first(0.05, 0.95)]},  # type: ignore[list-item]
        rounds=1,
        elapsed_s=12.0,
        round_s=(12.0,),
        run_s={"baseline": (6.0,), "target": (6.0,)},
    )
    plain = COST_MARGIN * 1.3 + RUN_OVERHEAD_S
    assert tally.next_run_s("target") == pytest.approx(plain)
    assert tally.next_round_s == pytest.approx(2 * plain)
    # a first run that failed (no metrics) is costed by its wall time, as before
    failed = replace(tally, done={"baseline": [], "target": [SimpleNamespace(ok=False)]})
    assert failed.next_run_s("target") == pytest.approx(COST_MARGIN * 6.0)


def _quality_run(step_s: float, steps: int = 30, warmup: int = 2) -> SimpleNamespace:
    """A side's first bundle as ``size_timing`` reads it: 1% step noise."""
    rng = np.random.default_rng(int(step_s * 1e6))
    steady = list(step_s * np.exp(rng.normal(0, 0.01, steps - 1 - warmup)))
    phases = SimpleNamespace(
        start_import_s=0.05,
        load_s=0.05,
        first_step_s=3 * step_s,
        warmup_s=warmup * 1.5 * step_s,
        warmup_steps=warmup,
        steady_s=sum(steady),
        steady_steps=len(steady),
    )
    metrics = SimpleNamespace(
        steady_samples=steady,
        phases=phases,
        step_samples_s=[3 * step_s] + [1.5 * step_s] * warmup + steady,
    )
    # one intra-op thread: what the contention line reads where the machine is busy
    manifest = SimpleNamespace(
        side=parse_side("cpu"),
        resolved=SimpleNamespace(threads=1),
        environment=SimpleNamespace(placement=None),
    )
    return SimpleNamespace(ok=True, metrics=metrics, manifest=manifest, placement=None)


def test_timing_processes_are_sized_from_each_side_s_quality_run(tmp_path: Path) -> None:
    """After the first round each side's timing processes get their own steps (slow steps:
    the floor of 10 steady after the warm-up), and where three a side will not fit the
    budget a line says, before they run, the budget that would."""
    from parity.measure.stopping import size_timing, timing_plan
    from parity.stats import MIN_STEADY

    sized = size_timing(_quality_run(0.12))  # type: ignore[arg-type]
    assert sized is not None and sized.steps == 1 + 2 + MIN_STEADY and sized.shortened
    assert sized.workload_steps == 30 and "Cochran" in sized.reason
    # a process 4x slower than the quality run's pace ends once its warm-up and 5 are in
    assert sized.cut is not None and sized.cut.at_least == 1 + 2 + 5
    assert sized.cut.after_s == pytest.approx(4 * (sized.steps - 1) * 0.12, rel=0.05)
    assert f"after the first pass {sized.cut.after_s:.1f} s ends once 8 are in" in sized.reason
    quick = size_timing(_quality_run(0.001, steps=400))  # type: ignore[arg-type]
    assert quick is not None and quick.cut is not None and quick.cut.after_s == 1.0
    orch = Orchestrator(out=tmp_path)
    orch.start_budget()
    done = {"baseline": [_quality_run(0.02)], "target": [_quality_run(0.12)]}
    steps = timing_plan(orch, Plan(budget_s=30.0), runs_after=2, shorten=True)(done)  # type: ignore[arg-type]
    assert steps == {"baseline": 13, "target": 13} and orch.notes == []
    # after the second round, the spread measured between processes (20% here) sizes them
    spread = {"baseline": [*done["baseline"], _quality_run(0.025)], "target": done["target"] * 2}
    plan = timing_plan(orch, Plan(budget_s=30.0), runs_after=2, shorten=True)
    noisy = {"baseline": [_quality_run(0.001, steps=400)] * 2, "target": spread["baseline"]}
    assert plan(noisy)["baseline"] == 1 + 2 + MIN_STEADY  # type: ignore[arg-type]
    timing = orch.timing["baseline"]
    assert timing is not None and "apart (measured)" in timing.reason
    tight = Orchestrator(out=tmp_path)
    tight.start_budget()
    timing_plan(tight, Plan(budget_s=1.0), runs_after=2, shorten=False)(done)  # type: ignore[arg-type]
    assert tight.timing == {"baseline": None, "target": None}
    assert len(tight.notes) == 1 and "3 processes a side need about" in tight.notes[0]
    assert "more than --budget 1: measuring them anyway; --budget" in tight.notes[0]


def _threaded(step_s: float, spec: str, threads: int) -> SimpleNamespace:
    run = _quality_run(step_s)
    run.manifest = SimpleNamespace(
        side=parse_side(spec),
        resolved=SimpleNamespace(threads=threads),
        environment=SimpleNamespace(placement=None),
    )
    return run


@pytest.mark.parametrize(
    ("share", "threads", "said"), [(0.5, 2, True), (0.02, 2, False), (0.5, 1, False)]
)
def test_a_busy_machine_s_threads_are_named_before_the_timing_processes_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, share: float, threads: int, said: bool
) -> None:
    """Where other processes already hold the cores after the first round and a host side
    runs several intra-op threads, a line says so before the timing processes run."""
    from parity.measure.stopping import timing_plan
    from parity.model.side import Interference

    orch = Orchestrator(out=tmp_path)
    orch.start_budget()
    busy = Interference(share=share, other_cpu_s=share * 2 * 10, cores=2, wall_s=10.0)
    orch.watch = SimpleNamespace(finish=lambda: busy)  # type: ignore[assignment]
    done = {
        "baseline": [_threaded(0.02, "cpu", threads)],
        "target": [_threaded(0.04, "cpu+bf16", threads)],
    }
    with caplog.at_level("WARNING", logger="parity"):
        timing_plan(orch, Plan(budget_s=30.0), runs_after=2, shorten=True)(done)  # type: ignore[arg-type]
    lines = [r.getMessage() for r in caplog.records if "intra-op threads" in r.getMessage()]
    assert bool(lines) == said, lines
    if said:
        assert f"each side ran {threads} intra-op threads" in lines[0]
        assert "--baseline cpu+threads=1 --target cpu+bf16+threads=1" in lines[0]
        assert "measuring goes on" in lines[0] and lines[0].startswith("parity: ")


@pytest.mark.slow
def test_a_comparison_s_timing_processes_run_the_steps_its_verdict_states(tmp_path: Path) -> None:
    """Real workers: each side's r00 runs the workload's 200 steps; every later process of
    a side, and the target's compliance runs, the steps ``verdict.json`` states for it."""
    from parity import api
    from parity.request import CompareRequest

    request = CompareRequest.from_kwargs(
        workload="mlp-train", target="cpu+threads=1", steps=200, repeats=3, out=str(tmp_path)
    )
    result = api.compare(request)
    speed = json.loads((tmp_path / "verdict.json").read_text())["speed"]
    assert speed["repeats"] == {"baseline": 3, "target": 3}
    for role, side in (("baseline", result.baseline), ("target", result.target)):
        timing = speed["timing"][role]
        assert timing["workload_steps"] == 200 and "Cochran" in timing["reason"]
        ran = [len(b.metrics.step_samples_s) for b in side.repeats if b.metrics]
        assert ran[0] == 200 and ran == timing["ran"], (role, timing)
        assert ran[2] == timing["steps"]  # sized again after the second round
    for run in result.target.compliance.values():
        assert run.metrics is not None
        assert len(run.metrics.step_samples_s) == speed["timing"]["target"]["steps"]
