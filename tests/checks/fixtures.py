"""Workloads that fail the checks on purpose (user-file workloads for the workers)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from parity.workloads.base import RunContext, RunNumerics, StepRunner
from parity.workloads.cnn import CnnInfer
from parity.workloads.loops import InferRunner, TrainRunner
from parity.workloads.mlp import MlpTrain

LR = 1e-2
WARMUP = 10
LEAK_FLOATS = 1 << 16  # 256 KiB kept per step


class _CountingWarmup(TrainRunner):
    """A learning-rate warm-up counted by the runner itself instead of from the step index:
    state that no checkpoint holds, so a resumed run starts its warm-up again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.count = 0

    def step(self, i: int) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = LR * min(1.0, (self.count + 1) / WARMUP)
        self.count += 1
        super().step(i)


class ForgetsWarmup(MlpTrain):
    name: ClassVar[str] = "forgets-warmup"

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        x, y, eval_x = data["x"], data["y"], data["eval_x"]

        def loss_fn(m: nn.Module, i: int) -> torch.Tensor:
            j = i % x.shape[0]
            return F.cross_entropy(m(x[j]), y[j])

        return _CountingWarmup(model, ctx, loss_fn=loss_fn, eval_fn=lambda m: m(eval_x), lr=LR)


class _Leaky(StepRunner):
    def __init__(self, inner: StepRunner) -> None:
        self.inner = inner
        self.kept: list[torch.Tensor] = []

    def step(self, i: int) -> None:
        self.inner.step(i)
        self.kept.append(torch.ones(LEAK_FLOATS))  # a "cache" that is never evicted

    def finish(self) -> RunNumerics:
        return self.inner.finish()


class LeakyInfer(CnnInfer):
    """cnn-infer whose runner keeps 256 KiB per step for ever."""

    name: ClassVar[str] = "leaky-infer"

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        return _Leaky(InferRunner(model, data["images"], ctx, forward=lambda m, b: m(b)))
