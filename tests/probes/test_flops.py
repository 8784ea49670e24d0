"""FLOPs per step never vanish: meta tensors, else one CPU step, else an estimate, else a
recorded reason that the verdict's report shows."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import pytest
import torch
from torch import nn

from parity.devices import specs
from parity.model.metrics import Flops
from parity.model.spec import WorkloadSpec
from parity.model.verdict import ByRole
from parity.probes import flops
from parity.probes.flops import count_flops
from parity.report import fmt
from parity.report.parts import Sentence, Table
from parity.report.view import build_view
from parity.workloads.base import RunContext, RunNumerics, StepRunner
from parity.workloads.cnn import CnnInfer
from parity.workloads.frozen import materialize
from parity.workloads.mlp import MlpTrain
from tests.report.cases import golden


def _on_meta() -> bool:
    return torch.empty(0).device.type == "meta"


class RefusesMeta(MlpTrain):
    """Builds its model the way ``from_pretrained`` does: never under the meta device."""

    name: ClassVar[str] = "refuses-meta"

    def build_model(self) -> nn.Module:
        if _on_meta():
            raise RuntimeError("from_pretrained refuses the meta device")
        return super().build_model()


class _Failing(StepRunner):
    def __init__(self, fails: bool) -> None:
        self.fails = fails

    def step(self, i: int) -> None:
        if self.fails:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def finish(self) -> RunNumerics:
        return RunNumerics()


class StepFails(MlpTrain):
    name: ClassVar[str] = "step-fails"
    on_meta_only: ClassVar[bool] = False

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        return _Failing(not self.on_meta_only or ctx.device.type == "meta")


class StepFailsOnMeta(StepFails):
    name: ClassVar[str] = "step-fails-on-meta"
    on_meta_only: ClassVar[bool] = True


class NeverBuilds(MlpTrain):
    name: ClassVar[str] = "never-builds"

    def build_model(self) -> nn.Module:
        raise OSError("config.json is missing")


def _count(cls: type[MlpTrain]) -> Flops:
    w = cls(WorkloadSpec(name=cls.name))
    _, data = materialize(MlpTrain(WorkloadSpec(name="mlp-train")))
    return count_flops(w, data)


def test_meta_tensors_count_first() -> None:
    found = _count(MlpTrain)
    assert found.method_name == "meta" and found.tried is None and found.error is None
    assert found.per_step is not None and found.per_step > 0
    assert found.method == flops.METHODS["meta"]


def test_a_model_that_refuses_meta_is_counted_on_the_cpu_alike() -> None:
    found = _count(RefusesMeta)
    assert found.method_name == "cpu"
    assert found.per_step == _count(MlpTrain).per_step  # the same count, found otherwise
    tried = {t.method: t.error for t in found.tried or ()}
    assert "refuses the meta device" in tried["meta"]


def test_a_step_that_runs_nowhere_is_estimated_from_the_parameters() -> None:
    w = StepFails(WorkloadSpec(name=StepFails.name))
    found = _count(StepFails)
    assert found.method_name == "estimate"
    assert found.per_step == 6 * w.parameter_count() * w.batch_size
    assert [t.method for t in found.tried or ()] == ["meta", "cpu"]


def test_a_step_too_large_for_the_cpu_is_estimated_without_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(flops, "CPU_BUDGET", 0)
    found = _count(StepFailsOnMeta)
    assert found.method_name == "estimate"
    skipped = (found.tried or ())[-1]
    assert skipped.method == "cpu" and "skipped" in skipped.error


def _sides_section(count: Flops) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """The report's sides table rows and sentences with ``count`` on both sides."""
    v = golden("passes")
    sides = ByRole(
        baseline=replace(v.sides.baseline, flops=count),
        target=replace(v.sides.target, flops=count),
    )
    section = build_view(replace(v, sides=sides)).section("sides")
    assert section is not None
    table = next(p for p in section.parts if isinstance(p, Table))
    rows = {r.cells[0]: r.cells[1:] for r in table.rows}
    return rows, [p.text for p in section.parts if isinstance(p, Sentence)]


def test_no_count_at_all_is_a_reason_the_verdict_shows() -> None:
    found = _count(NeverBuilds)
    assert found.per_step is None and found.method_name is None
    assert found.error is not None and "config.json is missing" in found.error
    rows, sentences = _sides_section(found)
    assert rows["FLOPs per step"] == ("not counted", "not counted")
    assert any(
        s.startswith("baseline FLOPs not counted: meta: OSError: config.json is missing")
        for s in sentences
    )


def test_a_count_is_shown_with_its_method() -> None:
    found = _count(RefusesMeta)
    assert fmt.flop_count(found).endswith("GFLOP (cpu)")
    rows, _ = _sides_section(found)
    assert rows["FLOPs per step"] == (fmt.flop_count(found),) * 2


def test_convolutions_are_counted_apart_from_the_rest() -> None:
    """The count keeps the convolutions' share (a GPU may run them in another format than
    the matmuls): a CNN's step is mostly convolutions, an MLP's has none."""
    cnn = CnnInfer(WorkloadSpec(name="cnn-infer", size="tiny"))
    _, data = materialize(cnn)
    counted = count_flops(cnn, data)
    assert counted.per_step and counted.conv_per_step is not None
    assert 0.5 * counted.per_step < counted.conv_per_step <= counted.per_step
    assert _count(MlpTrain).conv_per_step == 0


H200 = "NVIDIA H200"


@pytest.mark.parametrize("share", [0.0, 0.25, 0.5, 0.97, 1.0])
def test_a_step_in_two_formats_is_judged_against_their_weighted_peak(share: float) -> None:
    """fp32 matmuls (IEEE) and TF32 convolutions (cuDNN's default) on one step: the peak is
    the rate were each op at its own format's peak, so a step that ran exactly that fast
    reads MFU 1 whatever the mix, and the TF32 part cannot lift MFU past 1."""
    fp32, tf32 = (specs.peak_flops(H200, d) for d in ("fp32", "tf32"))
    assert fp32 is not None and tf32 is not None
    total = 1e12
    counted = Flops(per_step=total, method="test", conv_per_step=share * total)
    found = flops.peak(H200, "fp32", "tf32", counted)
    assert found is not None
    fastest = share * total / tf32.flops + (1 - share) * total / fp32.flops  # seconds
    assert flops.mfu(counted, fastest, found).mfu == pytest.approx(1.0)
    assert fp32.flops <= found.flops <= tf32.flops
    if share == 0.0:
        assert found == fp32
    else:
        assert found.dtype == "tf32 conv + fp32 matmul" and found.source
        assert f"{share:.0%} convolutions" in found.source


def test_one_format_or_an_unknown_one_keeps_the_plain_peak_or_none() -> None:
    counted = Flops(per_step=1e12, method="test", conv_per_step=5e11)
    assert flops.peak(H200, "bf16", "bf16", counted) == specs.peak_flops(H200, "bf16")
    assert flops.peak(H200, "fp32", None, counted) == specs.peak_flops(H200, "fp32")
    uncounted = Flops(per_step=1e12, method="estimate")  # no split known: the matmuls'
    assert flops.peak(H200, "fp32", "tf32", uncounted) == specs.peak_flops(H200, "fp32")
    assert flops.peak(H200, "fp32", "int4", counted) is None  # no peak rather than a wrong one
