"""Where a NaN first appeared: the replay with a finite check on every module."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from parity.model.spec import SideSpec, WorkloadSpec
from parity.probes.nonfinite import FiniteWatch, locate
from parity.runner.load import load_model
from parity.workloads.base import RunContext, StepRunner
from parity.workloads.frozen import materialize
from parity.workloads.loops import TrainRunner
from parity.workloads.mlp import MlpTrain

CTX = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")


class NanInForward(MlpTrain):
    """``body.2`` outputs a NaN at its third call (step 2)."""

    def build_model(self) -> nn.Module:
        model = super().build_model()
        calls = [0]

        def hook(mod: nn.Module, args: Any, out: torch.Tensor) -> torch.Tensor:
            calls[0] += 1
            if calls[0] == 3:
                out = out.clone()
                out.view(-1)[5] = float("nan")
            return out

        model.get_submodule("body.2").register_forward_hook(hook)
        return model


class NanInUpdate(MlpTrain):
    """Every forward finite; the optimizer writes a NaN into ``head.bias`` at step 1."""

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        runner = super().make_runner(model, data, ctx)
        assert isinstance(runner, TrainRunner)
        inner = runner.optimizer.step
        count = [0]

        def step(*args: Any, **kwargs: Any) -> Any:
            out = inner(*args, **kwargs)
            count[0] += 1
            if count[0] == 2:
                with torch.no_grad():
                    model.get_submodule("head").bias[0] = float("nan")  # type: ignore[index]
            return out

        runner.optimizer.step = step  # type: ignore[method-assign]
        return runner


def replay(cls: type[MlpTrain]) -> Any:
    workload = cls(WorkloadSpec(name="mlp-train", steps=4))
    weights, data = materialize(workload)
    return locate(workload, lambda: load_model(workload, weights), data, CTX)


def test_a_nan_in_a_forward_names_its_step_and_module() -> None:
    origin = replay(NanInForward)
    assert origin.found and (origin.step, origin.module, origin.where) == (2, "body.2", "forward")


def test_a_nan_written_by_the_update_names_the_parameter() -> None:
    origin = replay(NanInUpdate)
    assert origin.found and origin.where == "update" and origin.step == 1
    assert (origin.module, origin.parameter) == ("head", "head.bias")


def test_a_clean_replay_says_it_did_not_reproduce() -> None:
    origin = replay(MlpTrain)
    assert not origin.found and "not reproduced" in (origin.detail or "")


def test_the_watch_reads_its_flags_once_per_step_and_clears_them() -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    watch = FiniteWatch(model)
    model(torch.ones(2, 3))
    assert len(watch.flags) == 3 and watch.first_bad() is None and not watch.flags
    model(torch.full((2, 3), float("inf")))
    assert watch.first_bad() == "0"
    watch.close()
    model(torch.ones(2, 3))
    assert not watch.flags
