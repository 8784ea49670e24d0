"""The pre-run estimate and the plan it makes within ``--budget`` (``parity.measure.estimate``), on
given cheap figures (no worker processes), and end to end where a comparison is refused."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from parity.errors import OptionError
from parity.measure import estimate as est
from parity.model.estimate import StepCost
from parity.model.side import MeasurePlan
from parity.model.spec import SideSpec

COST = StepCost(
    step_s=0.1, load_s=0.5, dtype_ratio={"float64": 2.0, "bfloat16": 6.0}, method="test"
)
PARITY = (sys.executable, "-m", "parity")
CPU, BF16 = SideSpec(device="cpu"), SideSpec(device="cpu", precision="bf16")


def costed(budget: float, **more: object) -> est.Costed:
    fields: dict[str, object] = {
        "cost": COST,
        "steps": 40,
        "baseline": CPU,
        "target": BF16,
        "expected": None,
        "plan": MeasurePlan(budget_s=budget, budget_given=True),
        **more,
    }
    return est.Costed(**fields)  # type: ignore[arg-type]


def seconds(e: est.Estimate, name: str) -> float | None:
    return next(p.seconds for p in e.phases if p.name.startswith(name))


def test_each_phase_is_costed_from_one_step_and_the_dtype_ratios() -> None:
    e = est.plan(costed(1000.0))
    assert e.processes == 3 and not e.cuts
    assert seconds(e, "fp64 reference") == pytest.approx(1.0 + (40 + 2) * 0.1 * 2.0)
    assert seconds(e, "baseline quality run") == pytest.approx(1.0 + 40 * 0.1)
    assert seconds(e, "target quality run") == pytest.approx(1.0 + 40 * 0.6)  # bf16 at 6x
    assert seconds(e, "target op scan") == pytest.approx(est.SCAN_FIXED_S + 20 * 0.6)
    n = est.timing_steps(40)
    assert n < 40 and seconds(e, "baseline timing processes") == pytest.approx(2 * (1 + n * 0.1))
    assert e.full_budget_s >= e.planned_s
    assert "estimate: about" in est.summary(e) and "budget 1000 s" in est.summary(e)


def test_a_reduced_precision_step_timed_itself_is_used_instead_of_the_matmul_ratio() -> None:
    # a CPU without bf16 units: its bf16 matmul is 70x float32's, a small model's step 8x
    timed = replace(COST, dtype_ratio={"bfloat16": 70.0}, precision_step_s={"bf16": 0.8})
    e = est.plan(costed(1000.0, cost=timed))
    assert seconds(e, "target quality run") == pytest.approx(1.0 + 40 * 0.8)
    ratio_only = est.plan(costed(1000.0, cost=replace(timed, precision_step_s={})))
    assert seconds(ratio_only, "target quality run") == pytest.approx(1.0 + 40 * 7.0)
    assert "a step in bf16 800 ms" in est.basis(timed)


def test_a_float64_step_timed_itself_costs_the_reference_instead_of_the_matmul_ratio() -> None:
    """A convolution's float64 kernel scales unlike a matmul's: where the freeze job timed
    a step in float64 (the reference not cached), the reference is costed from it."""
    from parity.model.estimate import FP64

    timed = replace(COST, precision_step_s={FP64: 0.45})
    e = est.plan(costed(1000.0, cost=timed))
    assert seconds(e, "fp64 reference") == pytest.approx(1.0 + (40 + 2) * 0.45)
    assert seconds(est.plan(costed(1000.0)), "fp64 reference") == pytest.approx(
        1.0 + (40 + 2) * 0.1 * 2.0
    )
    assert seconds(e, "target quality run") == pytest.approx(1.0 + 40 * 0.6)  # bf16 unchanged
    assert "a step in fp64 450 ms" in est.basis(timed)


def test_a_reference_runs_the_steps_its_outputs_need_and_a_probe_its_summaries() -> None:
    """A generation or inference workload's reference runs one step (its outputs are the
    same after one as after all); every probe pays its per-module summaries, which cost a
    small CNN many times its step (cnn-infer's fp64 probe ran 2-4x its estimate)."""
    timed = replace(COST, reference_steps=1, summary_s=3.0, finish_steps=5.0)
    e = est.plan(costed(1000.0, cost=timed, expected=SideSpec(device="cpu", precision="fp16")))
    assert seconds(e, "fp64 reference") == pytest.approx(1.0 + (1 + 5 + 2) * 0.2 + 3.0)
    assert seconds(e, "expected-error run") == pytest.approx(1.0 + (1 + 5 + 2) * 0.1 + 3.0)
    assert seconds(e, "baseline quality run") == pytest.approx(1.0 + (40 + 5) * 0.1)  # all
    assert seconds(e, "baseline numerics probe") == pytest.approx(est.PROBE_FIXED_S + 0.2 + 3.0)
    assert seconds(e, "target numerics probe") == pytest.approx(est.PROBE_FIXED_S + 1.2 + 3.0)


@pytest.mark.parametrize("asked", [1, 2, 5])
def test_repeats_asked_are_the_processes_estimated(asked: int) -> None:
    """``--repeats N`` runs N processes a side whatever the budget: the estimate costs
    those, not the default's three (one is the quality run alone)."""
    e = est.plan(costed(1.0, plan=MeasurePlan(repeats=asked, budget_s=1.0, budget_given=True)))
    assert e.processes == asked and not e.cuts
    timing = [p for p in e.phases if "timing processes" in p.name]
    if asked == 1:
        assert not timing
    else:
        assert [p.name.split(" (")[1] for p in timing] == [
            f"{asked - 1} x {est.timing_steps(40)} steps)"
        ] * 2
    assert f"for {asked} process(es) a side" in est.summary(e)
    assert ("undetermined below 3" in est.summary(e)) == (asked < 3)
    assert not est.notes(e, asked)  # nothing was planned to fit the budget


def test_the_budget_cuts_compliance_then_the_baseline_scan_then_probes_then_processes() -> None:
    full = est.plan(costed(1000.0))
    seen: list[str] = []
    previous: set[str] = set()
    for budget in range(int(full.planned_s), 30, -1):
        e = est.plan(costed(float(budget)))
        three_over = e.processes == 3 and e.planned_s <= est.THREE_OVER * budget
        assert e.planned_s <= budget or three_over or e.processes == 1
        cut = {p.name.split(" (")[0] for p in e.cuts}
        assert previous <= cut  # a smaller budget cuts what a larger one did, and more
        seen += sorted(cut - previous)
        previous = cut
    assert seen[:2] == [est.COMPLIANCE, "baseline op scan"]
    assert set(seen[2:4]) == {"baseline numerics probe", "target numerics probe"}
    assert "target op scan" not in seen  # compatibility is never cut
    assert e.processes == 1


def test_fewer_than_three_processes_say_undetermined_and_shape_the_plan() -> None:
    e = est.plan(costed(40.0))
    assert e.processes < 3
    assert any("undetermined" in line for line in est.notes(e))
    # the line printed before the sides run asks for the budget that buys three
    line = est.summary(e)
    assert f"--budget {e.full_budget_s:.0f} buys 3" in line and "undetermined below 3" in line
    assert "undetermined" not in est.summary(est.plan(costed(1000.0)))
    three = est.plan(costed(e.full_budget_s))
    assert three.processes >= 3, (three.processes, e.full_budget_s)
    plan = est.planned(MeasurePlan(budget_s=40.0), e)
    assert plan.planned_rounds == e.processes and not plan.compliance
    assert plan.max_repeats == MeasurePlan(budget_s=40.0).max_repeats  # more run where they fit
    assert est.skipped(e, "baseline") == ("numerics probe", "scan")
    assert est.skipped(e, "target") == ("numerics probe",)


def test_three_processes_a_side_run_over_a_budget_they_are_near_and_say_so() -> None:
    """Everything optional cut, three a side within ``THREE_OVER`` times the budget still
    run (a loaded machine's estimate was 40 s against the demo's 30 and it planned one a
    side); further over, the processes are cut and the line asks for a budget."""
    everything = est.plan(costed(1000.0)).planned_s
    least_three = everything - sum(
        p.seconds or 0.0
        for p in est.plan(costed(1000.0)).phases
        if any(k in p.name for k in (est.COMPLIANCE, est.BASE_SCAN, est.PROBES))
    )
    near = est.plan(costed(least_three / 1.5))
    assert near.processes == 3 and near.planned_s == pytest.approx(least_three)
    assert {p.name.split(" (")[0] for p in near.cuts} >= {est.COMPLIANCE, "baseline op scan"}
    line, notes = est.summary(near), est.notes(near)
    assert "3 processes a side come first: planned over --budget" in line
    assert "undetermined" not in line and any("come first" in n for n in notes)
    three_first = est.planned(MeasurePlan(budget_s=least_three / 1.5), near)
    assert three_first.planned_rounds is None and three_first.max_repeats >= 3
    far = est.plan(costed(least_three / (est.THREE_OVER + 0.5)))
    assert far.processes < 3 and "undetermined below 3" in est.summary(far)


def test_rounds_past_a_plan_of_fewer_than_three_replace_its_notes() -> None:
    e = est.plan(costed(40.0))
    assert e.processes < 3
    planned = est.notes(e)
    took = {"baseline quality run": 0.4, "target quality run": 0.9}
    assert est.outran(e, planned, e.processes, took) == planned  # ran as planned
    notes = est.outran(e, ["another line", *planned], 5, took)
    assert notes[0] == "another line" and not any("undetermined" in n for n in notes)
    assert not any("planned to fit" in n for n in notes)
    assert any("dropped" in n for n in notes)  # the cuts of other phases stand
    line = notes[-1]
    assert f"fitted {e.processes} process(es) a side" in line and "to 5 a side" in line
    assert "baseline quality run 0.4 s against" in line
    assert "3 a side would settle" in est.outran(e, planned, 2, took)[-1]
    # a plan of three a side or more says nothing when precision asks for more
    three = est.plan(costed(1000.0))
    assert est.outran(three, [], 6, took) == []


def test_cached_phases_cost_a_copy_and_are_never_cut() -> None:
    cached = est.Cached(reference=True, probe=(True, True), scan=(True, False))
    e = est.plan(costed(30.0, cached=cached))
    assert seconds(e, "fp64 reference") == 0.0
    assert seconds(e, "baseline op scan") == 0.0
    assert all(not p.cached for p in e.cuts)


def test_a_comparison_far_over_its_budget_is_refused_in_one_line() -> None:
    with pytest.raises(OptionError) as caught:
        est.plan(costed(5.0))
    line = str(caught.value)
    assert "\n" not in line and "more than --budget 5" in line and "run with --budget" in line


def test_the_default_timeout_follows_the_estimate_and_a_given_one_short_of_it_refuses() -> None:
    """Issue 52: a 135M model's fp64 reference estimated at 1312 s was killed at the
    default 900 s. The default follows the longest process (3x its estimate); a given
    --timeout under a process's estimate is refused before anything runs, naming both."""
    slow = replace(COST, step_s=10.0, dtype_ratio={"float64": 3.0, "bfloat16": 1.0})
    e = est.plan(costed(1e6, cost=slow))
    runs = est.processes_s(e)
    assert max(runs, key=runs.__getitem__) == "the fp64 reference"
    ref = runs["the fp64 reference"]
    assert ref == pytest.approx(0.5 + 0.5 + 42 * 30.0)  # start, load, 40 steps + 2 probe
    assert est.process_timeout(e, MeasurePlan()) == pytest.approx(3 * ref, abs=1)
    assert "fp64 reference" in est.timeout_note(e, 3 * ref)
    with pytest.raises(OptionError) as caught:
        est.process_timeout(e, MeasurePlan(timeout_s=900.0, timeout_given=True))
    line = str(caught.value)
    assert "fp64 reference" in line and "--timeout 900" in line
    assert f"--timeout {math.ceil(3 * ref)}" in line
    # a given timeout that holds it stands; a quick workload keeps the default
    assert est.process_timeout(e, MeasurePlan(timeout_s=2000.0, timeout_given=True)) == 2000.0
    assert est.process_timeout(est.plan(costed(1e6)), MeasurePlan()) == 900.0
    assert est.process_timeout(None, MeasurePlan()) == 900.0


def test_the_default_budget_never_refuses_it_cuts_and_measures() -> None:
    """A real model far over the default 30 s is measured with everything cut (and says
    "undetermined"), not refused: only a budget the user gave refuses."""
    e = est.plan(costed(5.0, plan=MeasurePlan(budget_s=5.0)))
    assert e.processes == 1 and e.planned_s > 3 * 5.0


def test_a_little_over_the_budget_runs_with_everything_cut() -> None:
    e = est.plan(costed(30.0))  # the least is about 40 s: under 3x the budget
    assert e.processes == 1 and e.planned_s > 30.0


def test_repeats_fix_the_work_and_an_accelerator_is_not_estimated() -> None:
    fixed = est.plan(costed(1.0, plan=MeasurePlan(budget_s=1.0, repeats=3)))
    assert not fixed.cuts
    gpu = est.plan(costed(1000.0, target=SideSpec(device="cuda", precision="bf16")))
    assert seconds(gpu, "target quality run") is None
    assert "not estimated: target quality run" in est.summary(gpu)


def test_the_expected_run_s_side() -> None:
    assert est.expected_side(BF16) is None  # its own quality run
    # a CUDA or neuron target's autocast follows CUDA's lists: reproduced on the CPU
    cuda_lists = SideSpec(device="cpu", precision="bf16", autocast="cuda")
    assert est.expected_side(SideSpec(device="cuda", precision="bf16")) == cuda_lists
    assert est.expected_side(SideSpec(device="neuron", precision="bf16")) == cuda_lists
    assert est.expected_side(SideSpec(device="parityfake", precision="bf16")) == BF16
    assert est.expected_side(CPU) is None
    e = est.plan(costed(1000.0, expected=BF16))
    assert seconds(e, "expected-error run (cpu+bf16)") == pytest.approx(1.0 + 42 * 0.6)


def test_planned_leaves_a_plan_the_estimate_did_not_cut() -> None:
    plan = MeasurePlan()
    assert est.planned(plan, None) is plan
    assert est.planned(plan, est.plan(costed(1000.0))) == plan
    assert est.skipped(None, "target") is None


def test_the_step_cost_is_part_of_the_prepared_workload_s_json() -> None:
    from parity.model.codec import decode, encode
    from parity.model.workload import PreparedWorkload, QualitySpec, WorkloadDescription

    d = WorkloadDescription(
        name="w", kind="train", size="tiny", quality=QualitySpec(kind="train", checks=())
    )
    p = PreparedWorkload(description=d, cost=replace(COST, precision_step_s={"bf16": 0.4}))
    assert decode(PreparedWorkload, json.loads(json.dumps(encode(p)))) == p
    assert "cost" not in encode(replace(p, cost=None))


@pytest.mark.slow
def test_a_comparison_far_over_its_budget_exits_2_before_anything_is_written(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [*PARITY, "compare", "mlp-train", *("--budget", "0.01", "--out", str(out))],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PARITY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "more than --budget 0.01: run with --budget" in last
    assert not out.exists() or not any(out.iterdir())


def test_a_full_run_pays_its_end_and_the_target_s_quality_run_its_forced_scoring() -> None:
    """A generation workload decodes and scores every prompt after its steps: the quality
    runs, the fp64 reference and the expected-error run pay that; the target's quality
    run scores the baseline's tokens as well; a timing process pays neither."""
    ending = replace(COST, finish_steps=30.0, forced_steps=8.0)
    e = est.plan(costed(1000.0, cost=ending, expected=SideSpec(device="cpu", precision="fp16")))
    assert seconds(e, "baseline quality run") == pytest.approx(1.0 + (40 + 30) * 0.1)
    assert seconds(e, "target quality run") == pytest.approx(1.0 + (40 + 30 + 8) * 0.6)
    assert seconds(e, "fp64 reference") == pytest.approx(1.0 + (40 + 30 + 2) * 0.1 * 2.0)
    assert seconds(e, "expected-error run") == pytest.approx(1.0 + (40 + 30 + 2) * 0.1)
    n = est.timing_steps(40)
    assert seconds(e, "baseline timing processes") == pytest.approx(2 * (1 + n * 0.1))


@pytest.mark.slow
def test_a_plan_of_fewer_than_three_measures_on_where_the_runs_take_less(
    tmp_path: Path,
) -> None:
    """The estimate is a guess made before anything ran: a workload slow only where it is
    costed (a loaded machine's estimate read a step 30x what its runs took, planned one
    process a side and ended "undetermined" with most of the budget left) plans fewer
    than three a side, and the rounds as measured go on to a verdict."""
    from tests.conftest import run_cli

    fixtures = Path(__file__).parent.parent / "fixtures" / "workloads.py"
    out = tmp_path / "out"
    cmp = run_cli(
        "compare", f"{fixtures}:SlowWhereEstimated", "--baseline", "cpu+threads=1",
        "--target", "cpu+bf16+threads=1", "--no-report", "--json", "--out", str(out),
        # a verdict is all it needs (three a side, not provisional): no rounds after that
        # toward ±2%, or past the cap while the interval is wider than ±5%
        "--precision", "0.5",
        env={"PARITY_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr[-3000:]
    first = cmp.stderr.splitlines()[0]
    assert "estimate:" in first and "undetermined below 3" in first, first
    speed = json.loads(cmp.stdout)["speed"]
    assert speed["stop"]["estimate"]["processes"] < 3
    assert min(speed["repeats"].values()) >= 3 and not speed["interval"]["provisional"]
    notes = speed["stop"]["notes"]
    assert not any("planned to fit" in n or "only the quality runs fit" in n for n in notes)
    assert any("the runs took less than it said" in n for n in notes), notes


def test_the_rounds_after_the_planned_processes_are_expected_to_fill_the_budget() -> None:
    # without --repeats the rounds go on until the interval is narrow enough or the budget
    # is spent, so a plan well under its budget is expected to take about the budget
    roomy = est.plan(costed(1000.0))
    assert roomy.rounds_s == pytest.approx(1000.0 - roomy.planned_s)
    assert roomy.expected_s == pytest.approx(1000.0)
    assert "about 17 minutes in all" in est.summary(roomy)
    # a plan over its budget adds nothing, and fixed repeats run no more rounds
    tight = est.plan(costed(40.0))
    assert tight.planned_s > 40.0 and tight.rounds_s == 0.0
    assert tight.expected_s == tight.planned_s and "in all" not in est.summary(tight)
    fixed = est.plan(costed(1000.0, plan=MeasurePlan(repeats=3, budget_s=1000.0)))
    assert fixed.rounds_s == 0.0 and fixed.expected_s == fixed.planned_s


def test_hours_at_the_default_budget_are_asked_for_not_started() -> None:
    # the default budget cuts what is optional; a least plan still over an hour (a large
    # checkpoint on a slow host) is refused with the --budget that runs it
    slow = replace(COST, step_s=40.0)
    default = MeasurePlan()  # no --budget given
    with pytest.raises(OptionError) as refused:
        est.plan(costed(30.0, cost=slow, plan=default))
    line = str(refused.value)
    assert "no --budget was given" in line and "\n" not in line
    least = est.plan(
        costed(30.0, cost=slow, plan=replace(default, budget_s=1e6, budget_given=True))
    )
    assert least.planned_s > est.ASK_OVER_S
    asked = int(line.split("run with --budget ")[1].split()[0])
    assert asked >= est.ASK_OVER_S
    # given, the same budget runs it; a plan under an hour at the default budget runs too
    assert est.plan(costed(float(asked), cost=slow)).planned_s > est.ASK_OVER_S
    assert est.plan(costed(30.0, plan=default)).planned_s < est.ASK_OVER_S
