"""The verdict from typed bundles: quality first, fairness refused or allowed, the resolved
settings and the environment compared, failures carried with their reasons."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from parity.errors import ContractError
from parity.judge.latency import pooled_generation
from parity.judge.verdict import _side_info, judge
from parity.model.bundle import Bundle, SideRuns
from parity.model.metrics import InputPipeline
from parity.model.numerics import NonFiniteOrigin
from parity.model.quality import LossCheck, NonFiniteCheck, TokensCheck
from parity.model.roles import ByRole
from parity.model.verdict import JudgeInputs
from parity.probes.latency import generation_metrics
from parity.report import words
from parity.report.figures import latency
from parity.report.parts import Table
from tests.fixtures import bundles

#: where the sides say they are (nothing is written: the judge takes them in memory)
ROOT = Path("/synthetic")
#: a side's logits: 320 rows, each with a clear arg-max (the top-1 gate decides on 299)
LOGITS = torch.tensor([1.0, 0.0, -1.0]).repeat(320, 1)


def side(
    path: Path,
    *,
    spec: str = "cpu",
    status: str = "ok",
    parts: dict[str, object] | None = None,
    losses: list[float | None] | None = None,
    out: torch.Tensor | None = None,
    step_s: float = 0.01,
    torch_version: str = "2.13.0",
    fed: InputPipeline | None = None,
    nonfinite: NonFiniteOrigin | None = None,
) -> SideRuns:
    work = bundles.workload_ref(fingerprint_parts=bundles.parts(**(parts or {})))
    man = bundles.manifest(role="x", spec=spec, workload=work, status=status)  # type: ignore[arg-type]
    env = man.environment
    assert env is not None
    man = replace(man, environment=replace(env, torch=replace(env.torch, version=torch_version)))
    samples = [step_s * 10] + [step_s * (1 + 0.01 * (i % 3)) for i in range(30)]
    made = bundles.make_bundle(
        path,
        man,
        run_metrics=bundles.metrics(samples, input_pipeline=fed) if status == "ok" else None,
        losses=list(losses or [2.0, 1.5, 1.0]),
        tensors={"logits": out if out is not None else LOGITS},
        nonfinite=nonfinite,
    )
    return SideRuns.of(made)


def test_same_results_pass() -> None:
    v = judge(side(ROOT / "a"), side(ROOT / "b", spec="cpu+bf16", step_s=0.005))
    assert v.passed and v.exit_code == 0
    assert [(d.setting, d.baseline, d.target) for d in v.config_differences] == [
        ("precision", "fp32", "bf16")
    ]
    # one process a side: the interval is provisional, so no verdict word (issue 28)
    assert v.speed is not None and v.speed.verdict == "undetermined"
    assert v.speed.ratio == pytest.approx(0.5, rel=0.05)
    assert v.sides.target.median_step_s == pytest.approx(v.speed.target_median_s)


def test_a_loader_on_both_sides_ticks_the_data_pipeline_and_names_the_input_bound_side() -> None:
    from tests.report.cases import fed

    baseline = side(ROOT / "a", fed=fed(0.0004, 0.020))
    target = side(ROOT / "b", fed=fed(0.030, 0.006))
    v = judge(baseline, target)
    a, b = v.sides.baseline.input_pipeline, v.sides.target.input_pipeline
    assert a is not None and not a.input_bound and b is not None and b.input_bound
    item = next(u for u in v.unproven if u.item == "the real data pipeline")
    evidence = words.unproven_evidence(item)
    assert item.checked and evidence is not None
    assert evidence.startswith("measured on both sides: baseline not input-bound")
    assert "target input-bound: 83%" in evidence
    # one side without a loader: measured there only, so the item stays open
    v = judge(side(ROOT / "c"), side(ROOT / "d", fed=fed(0.030, 0.006)))
    item = next(u for u in v.unproven if u.item == "the real data pipeline")
    assert not item.checked and v.sides.baseline.input_pipeline is None


def test_quality_failure_fails_the_gate_and_withholds_speed() -> None:
    v = judge(
        side(ROOT / "a"),
        side(ROOT / "b", losses=[2.0, 1.5, 1.3], out=LOGITS * 1.1),
    )
    assert not v.passed and v.exit_code == 1
    assert v.quality is not None and set(v.quality.failing) == {"loss curve", "output logits"}
    assert v.speed is None and v.cost is None and v.withheld is not None


def test_fp32_tolerance_is_tighter_than_bf16() -> None:
    off = LOGITS * 1.01
    assert not judge(side(ROOT / "a"), side(ROOT / "b", out=off)).passed
    assert judge(side(ROOT / "c"), side(ROOT / "d", spec="cpu+bf16", out=off)).passed


def test_only_sides_failing_alike_in_the_user_s_code_are_the_workload_s_error() -> None:
    """The same type, phase and line of the user's code on both sides: the workload's own
    error (exit 2, the references' failure not blamed either); a different line, a side
    failing outside the user's code, or one side alone: a side's failure (exit 1)."""
    from parity.model.manifest import FailedAt
    from parity.report.decision import headline, overall

    def failing(path: Path, at: FailedAt | None) -> SideRuns:
        runs = side(path, status="failed")
        bundle = replace(runs.first, manifest=replace(runs.first.manifest, failed_at=at))
        return SideRuns.of(bundle)

    here = FailedAt(type="ValueError", phase="steps", source="late.py:22")
    v = judge(failing(ROOT / "a", here), failing(ROOT / "b", here))
    assert v.exit_code == 2 and overall(v) == "ERROR"
    assert [g.name for g in v.gates] == ["the workload runs"]
    assert "ValueError in phase 'steps' at late.py:22" in words.gate(v.gates[0])
    assert headline(v)[0].startswith("ERROR: the workload fails on its own")
    for other in (
        replace(here, source="late.py:23"),
        replace(here, type="RuntimeError"),
        replace(here, phase="finish"),
        None,
    ):
        v = judge(failing(ROOT / "a", here), failing(ROOT / "b", other))
        assert v.exit_code == 1 and v.gates[0].name == "both sides ran", other
    v = judge(side(ROOT / "a"), failing(ROOT / "b", here))
    assert v.exit_code == 1 and "target failed" in words.gate(v.gates[0])


def test_a_failed_side_fails_with_its_reason() -> None:
    v = judge(side(ROOT / "a"), side(ROOT / "b", status="failed"))
    assert v.exit_code == 1 and v.quality is None
    assert "target failed: planted failure" in v.gates[0].detail
    assert v.sides.target.stderr_tail == "RuntimeError: planted"


def test_a_reference_that_timed_out_is_named_in_the_headline_never_the_target() -> None:
    """Issue 52: the fp64 reference timed out and the headline blamed the target. A failed
    reference (or expected-error run) is a gate not decided, named with its reason."""
    from parity.report.decision import headline

    timed_out = "timed out after 900 s in phase 'steps': raise --timeout or use a smaller --size"
    ref = bundles.make_bundle(
        ROOT / "reference",
        bundles.manifest(
            role="reference", spec="cpu", mode="reference", status="failed", reason=timed_out
        ),
    )
    v = judge(side(ROOT / "a"), side(ROOT / "b", spec="cpu+bf16"), reference=ref)
    assert not v.passed and v.exit_code == 3  # inconclusive, not the target failing
    title, _ = headline(v)
    assert title.startswith("NOT DECIDED: the fp64 reference timed out after 900 s"), title
    assert "not the target's failure" in title and "target fails" not in title
    # a target that fails besides still fails: the reference gate only adds its line
    off = side(ROOT / "c", status="failed")
    assert headline(judge(side(ROOT / "a"), off, reference=ref))[0].startswith("FAIL")
    assert judge(side(ROOT / "a"), side(ROOT / "b"), reference=None).passed  # none asked


def test_a_probe_the_budget_cut_is_said_in_quality_on_a_failing_verdict_too() -> None:
    """Issue 52: the note that the numerics probe was skipped sat under Speed, which a
    failing target never gets, so the FAIL never said why no layer was named."""
    from parity.model.estimate import Estimate, PhaseCost
    from parity.model.side import MeasurePlan, MeasureRecord, Stop
    from parity.report.quality import quality

    why = "skipped: the estimate is over --budget 30 (the per-module localisation is lost)"
    est = Estimate(
        phases=(
            PhaseCost(name="baseline numerics probe", seconds=2.0, basis="estimated", cut=why),
            PhaseCost(name="target numerics probe", seconds=2.0, basis="estimated", cut=why),
        ),
        basis="test",
        budget_s=30.0,
        processes=1,
        full_budget_s=481.0,
    )
    info = MeasureRecord(stop=Stop(reason="budget", message="m", estimate=est), plan=MeasurePlan())
    a, b = side(ROOT / "a"), side(ROOT / "b", out=LOGITS * 1.01)
    v = judge(replace(a, info=info), replace(b, info=info))
    assert not v.passed and v.speed is None  # a failing target: no Speed section
    cut = v.numerics.not_localised if v.numerics else None
    assert cut is not None and cut.code == "numerics.probe-cut"
    said = words.says(cut)
    assert "baseline and target's numerics probes were skipped" in said
    assert "--budget 481 runs them" in said
    section = quality(v)
    assert section is not None and any(
        "localisation: no module is named" in getattr(p, "text", "") for p in section.parts
    )
    # nothing cut: nothing said
    plain = judge(side(ROOT / "a"), side(ROOT / "b", out=LOGITS * 1.01))
    assert plain.numerics is None or plain.numerics.not_localised is None


def test_different_workloads_are_refused_naming_fields() -> None:
    a = side(ROOT / "a")
    b = side(ROOT / "b", parts={"steps": 30, "seed": 1})
    with pytest.raises(ContractError, match=r"steps, seed differ.*--allow-diff steps="):
        judge(a, b)
    with pytest.raises(ContractError, match="seed differ"):
        judge(a, b, inputs=JudgeInputs(allow={"steps": "shorter run"}))
    v = judge(a, b, inputs=JudgeInputs(allow={"steps": "shorter run", "seed": "reseeded"}))
    assert v.fairness.allowed == {"steps": "shorter run", "seed": "reseeded"}
    assert not v.fairness.fingerprint_match and v.contract.holds


def test_environment_differences_are_listed() -> None:
    v = judge(side(ROOT / "a"), side(ROOT / "b", torch_version="2.14.0"))
    assert [(d.field, d.baseline, d.target) for d in v.environment_differences] == [
        ("torch", "2.13.0", "2.14.0")
    ]


def test_resolved_settings_differences_show_what_specs_do_not() -> None:
    a, b = side(ROOT / "a", spec="cpu+compile"), side(ROOT / "b", spec="cpu+compile")
    first = b.first
    resolved = first.manifest.resolved
    assert resolved is not None
    # the same side spec, but the target's worker ran another backend and TF32 matmuls
    other = replace(resolved, compile_backend="neuron", matmul="tf32")
    v = judge(a, SideRuns.of(replace(first, manifest=replace(first.manifest, resolved=other))))
    shown = {(d.setting, d.baseline, d.target) for d in v.config_differences}
    assert ("compile_backend", "default", "neuron") in shown or any(
        d.setting == "compile_backend" and d.target == "neuron" for d in v.config_differences
    )
    assert any(d.setting == "matmul" and d.target == "tf32" for d in v.config_differences)


def test_tokens_without_margins_are_reported_not_gated() -> None:
    a = side(ROOT / "a", out=torch.tensor([[1, 2, 3], [4, 5, 6]]))
    b = side(ROOT / "b", out=torch.tensor([[1, 2, 9], [4, 5, 6]]))
    v = judge(a, b)
    assert v.quality is not None
    tokens = next(c for c in v.quality.checks if isinstance(c, TokensCheck))
    assert tokens.agreement == pytest.approx(5 / 6) and tokens.first_difference == (2, None)
    assert not tokens.gated and tokens.passed is None
    assert v.passed
    assert any(isinstance(c, LossCheck) for c in v.quality.checks)


def test_an_emulated_target_is_a_numerics_preview_without_speed_or_cost() -> None:
    a = side(ROOT / "a")
    b = side(ROOT / "b", spec="cpu+emulate=matmul-bf16", step_s=0.016)
    v = judge(a, b)
    assert v.passed and v.quality is not None and v.quality.passed
    assert v.speed is None and v.cost is None
    assert v.withheld is not None and v.withheld.code == "decision.withheld-emulated"
    said = words.says(v.withheld)
    assert "numerics preview" in said and "cpu+emulate=matmul-bf16" in said


def test_a_nan_loss_fails_quality_naming_its_step_and_module() -> None:
    origin = NonFiniteOrigin(found=True, step=2, module="body.2", where="forward")
    a = side(ROOT / "a", losses=[2.0, 1.5, 1.0, 0.9])
    b = side(ROOT / "b", losses=[2.0, 1.5, None, None], nonfinite=origin)
    v = judge(a, b)
    assert not v.passed and v.quality is not None and v.speed is None
    check = next(c for c in v.quality.checks if isinstance(c, NonFiniteCheck))
    assert (check.side, check.step, check.module, check.what) == ("target", 2, "body.2", "loss")
    assert "non-finite values (target)" in v.quality.failing
    assert "step 2, in the output of module body.2" in (words.detail(check) or "")


def test_a_nan_output_without_a_replay_says_the_module_is_unknown() -> None:
    bad = LOGITS.clone()
    bad[1, 1] = float("inf")
    v = judge(side(ROOT / "a", out=bad), side(ROOT / "b"))
    assert v.quality is not None and not v.quality.passed
    check = next(c for c in v.quality.checks if isinstance(c, NonFiniteCheck))
    assert check.side == "baseline" and check.what == "output logits" and check.module is None
    assert "module is unknown" in (words.detail(check) or "")


def _generating(path: Path, ttft_ms: float, steps: int) -> Bundle:
    """A bundle whose steady steps each made 4 tokens, the first after ``ttft_ms``."""
    stamps = [tuple(int((ttft_ms + 2 * k) * 1e6) for k in range(4)) for _ in range(steps)]
    gen = replace(generation_metrics(stamps, 2), token_times_ns=tuple(stamps))
    man = bundles.manifest(role="target", spec="cpu")
    samples = [0.02] + [0.01] * steps
    return bundles.make_bundle(path, man, run_metrics=bundles.metrics(samples, generation=gen))


def test_latency_percentiles_pool_every_repeat_as_the_speed_ratio_does() -> None:
    """Two processes, 10 ms and 30 ms to the first token: the side's TTFT pools both (its
    median between them, 20 samples), not the first repeat's alone."""
    repeats = (
        _generating(ROOT / "side" / "r00", 10.0, 10),
        _generating(ROOT / "side" / "r01", 30.0, 10),
    )
    side = SideRuns(path=ROOT / "side", repeats=repeats)
    pooled = pooled_generation(side.ok)
    assert pooled is not None and pooled.repeats == 2 and pooled.token_times_ns is None
    assert pooled.ttft_s.n == 20 and pooled.ttft_s.p50 == pytest.approx(0.020)
    assert pooled.ttft_s.p90 == pytest.approx(0.030)
    first = pooled_generation(side.ok[:1])
    assert first is not None and first.repeats == 1 and first.ttft_s.p50 == pytest.approx(0.010)
    # the verdict shows the pooled figures, and says over what
    info = _side_info(side)
    assert info.generation is not None and info.generation.ttft_s.n == 20
    legend = latency(ByRole(baseline=info, target=info))[0]
    assert isinstance(legend, Table) and "every repeat of each side" in (legend.legend or "")
    assert "(2 / 2 processes)" in (legend.legend or "")


def _repeat(path: Path, steps: int, *, step_s: float = 0.01, logits: float = 1.0) -> Bundle:
    """A repeat of the fixtures' workload that ran ``steps`` of its steps (a timing
    process runs fewer than the quality run)."""
    work = bundles.workload_ref(fingerprint_parts=bundles.parts(steps=31))
    man = bundles.manifest(role="x", spec="cpu", workload=work, repeat=int(path.name[1:]))
    samples = [step_s * 10] + [step_s * (1 + 0.01 * (i % 3)) for i in range(steps - 1)]
    return bundles.make_bundle(
        path,
        man,
        run_metrics=bundles.metrics(samples),
        losses=[2.0 - 0.01 * i for i in range(steps)],
        tensors={"logits": LOGITS * logits},
    )


def test_a_shorter_timing_process_is_compared_on_the_steps_it_ran() -> None:
    """Determinism of r00 (the quality run, 31 steps) and r01 (a timing process of 12):
    the losses of the 12 steps both ran; outputs, after different steps, not compared."""
    from parity.judge.quality import determinism

    side = (
        _repeat(ROOT / "side" / "r00", 31, logits=1.0),
        _repeat(ROOT / "side" / "r01", 12, logits=5.0),
    )
    found = determinism(side)
    assert found.checked and found.bitwise_equal and found.max_abs_loss_diff == 0.0
    assert "first 12 steps" in (words.detail(found) or "")


def _outputs(path: Path, tensors: dict[str, torch.Tensor]) -> Bundle:
    work = bundles.workload_ref(fingerprint_parts=bundles.parts(steps=4))
    man = bundles.manifest(role="x", spec="cpu", workload=work, repeat=int(path.name[1:]))
    samples = [0.01] * 4
    return bundles.make_bundle(path, man, run_metrics=bundles.metrics(samples), tensors=tensors)


def test_a_timing_process_is_compared_on_the_outputs_it_hands_over() -> None:
    """r01 of a generation loop hands over its first step's tokens and logits, not the
    quality run's decoding of every prompt again: those are compared, each of which r00
    must have; a difference in them, or an output r00 lacks, is not determinism."""
    from parity.judge.quality import determinism

    first = {"tokens": torch.arange(6).reshape(2, 3), "prefill_logits": torch.ones(2, 5)}
    quality_run = _outputs(ROOT / "gen" / "r00", {**first, "final_tokens": first["tokens"]})
    found = determinism((quality_run, _outputs(ROOT / "gen" / "r01", dict(first))))
    assert found.checked and found.bitwise_equal
    assert "prefill_logits, tokens" in (words.detail(found) or "")
    moved = {**first, "prefill_logits": first["prefill_logits"] + 0.5}
    found = determinism((quality_run, _outputs(ROOT / "gen" / "r01", moved)))
    assert not found.bitwise_equal and found.max_abs_output_diff == pytest.approx(0.5)
    extra = {**first, "other": torch.zeros(2, 2)}
    assert not determinism((quality_run, _outputs(ROOT / "gen" / "r01", extra))).bitwise_equal


def test_a_timing_process_s_cost_is_its_run_at_the_workload_s_steps() -> None:
    """The cost of "the measured run" is of the workload's 31 steps whichever process it
    is read from: a 12-step timing process's first steps and then its median step."""
    from parity.judge.cost import _run_seconds

    whole, short = _repeat(ROOT / "side" / "r00", 31), _repeat(ROOT / "side" / "r01", 12)
    assert _run_seconds(whole, None) == pytest.approx(sum(whole.metrics.step_samples_s))
    assert _run_seconds(short, None) == pytest.approx(_run_seconds(whole, None), rel=0.01)
    assert _run_seconds(short, 100) == pytest.approx(_run_seconds(whole, 100), rel=0.01)


#: a workload whose step raises in its own code at step 12 on every device: past the steps
#: the pre-run check times (at most 9), so both sides run and fail
LATE = """
from parity.workloads.base import RunContext, StepRunner
from parity.workloads.mlp import MlpTrain


class _Runner(StepRunner):
    def __init__(self, inner: StepRunner) -> None:
        self.inner = inner

    def step(self, i: int) -> None:
        self.inner.step(i)
        check(i)

    def finish(self):
        return self.inner.finish()


def check(i: int) -> None:
    if i >= 12:
        raise ValueError(f"step {i}: the user's bug")


class Late(MlpTrain):
    name = "late"

    def make_runner(self, model, data, ctx: RunContext) -> StepRunner:
        return _Runner(super().make_runner(model, data, ctx))
"""


@pytest.mark.slow
def test_a_workload_failing_alike_on_both_sides_after_the_pre_run_check_is_the_user_s(
    tmp_path: Path,
) -> None:
    """Both sides raise at the same line of the user's file, at a step the pre-run check
    did not reach: the workload's error, exit 2, its file and line named; nothing says the
    target failed (it was 'FAIL: the target fails a gate', exit 1)."""
    import json

    from tests.conftest import run_cli

    (tmp_path / "late.py").write_text(LATE)
    out = tmp_path / "out"
    result = run_cli(
        "compare",
        f"{tmp_path / 'late.py'}:Late",
        "--baseline",
        "cpu",
        "--target",
        "cpu+bf16",
        "--steps",
        "14",
        "--repeats",
        "1",
        "--out",
        str(out),
        env={"PARITY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 2, result.stdout + result.stderr
    line = LATE.splitlines().index('        raise ValueError(f"step {i}: the user\'s bug")') + 1
    shown = result.stdout + result.stderr
    assert "ERROR: the workload fails on its own: ValueError in phase 'steps'" in shown
    assert f"late.py:{line}" in shown
    assert "FAIL: the target" not in shown and "target failed" not in shown
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["exit_code"] == 2 and not verdict["passed"]
    gates = {g["name"]: g for g in verdict["gates"]}
    assert "both sides ran" not in gates and gates["the workload runs"]["passed"] is False


def test_a_per_prompt_gate_not_decided_says_the_steps_that_would_decide_it() -> None:
    """A 135M checkpoint at its default 5 steps gave about 45% of its rows decisive: the
    top-1 gate over every prompt's positions is not decided, and says how many steps (its
    rows grow with them) would give the 299 decisive rows it needs; a gate whose rows do
    not grow with the steps (eval_logits) says that more of its rows decide it."""
    from parity.judge.verdict import _steps_to_decide
    from parity.model.quality import AgreementCheck, Quality

    def _undecided_label(check: AgreementCheck, steps: int | None = None) -> str:
        more = _steps_to_decide(check, steps)
        q = Quality(
            tolerances={},
            checks=(check,),
            passed=False,
            method="quality.direct",
            undecided=(check.name,),
            undecided_steps=(more,),
        )
        return words.undecided(q)[0]

    every = AgreementCheck(
        name="top-1 every position",
        passed=None,
        metric="top1",
        threshold=0.99,
        output="every_top1",
        decisive=140,
        required=299,
    )
    assert _undecided_label(every, 5) == (
        "top-1 every position (140 decisive rows, 299 needed: about --steps 13 decides it)"
    )
    assert _undecided_label(every) == "top-1 every position (140 decisive rows, 299 needed)"
    evals = replace(every, name="top-1 eval_logits", output="eval_logits", decisive=4)
    assert _undecided_label(evals, 5) == (
        "top-1 eval_logits (4 decisive rows, 299 needed: eval_logits over more rows decides it)"
    )
