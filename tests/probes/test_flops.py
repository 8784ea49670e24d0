"""FLOPs per step never vanish: meta tensors, else one CPU step, else an estimate, else a
recorded reason that the verdict's report shows."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import pytest
import torch
from torch import nn

from parity.model.metrics import Flops
from parity.model.verdict import ByRole
from parity.probes import flops
from parity.probes.flops import count_flops
from parity.report import fmt
from parity.report.parts import Sentence, Table
from parity.report.view import build_view
from parity.spec import WorkloadSpec
from parity.workloads.base import RunContext, RunNumerics, StepRunner
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
