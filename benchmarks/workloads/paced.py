"""A workload with a known speed ratio: each step runs the tiny MLP's step, then sleeps to
a fixed pace, ``PACE_S`` on the baseline and ``TRUTH`` times that on a side with
``+deterministic`` (which changes nothing else an MLP on the CPU computes). On a quiet
machine the target's step is ``TRUTH`` times the baseline's; a competing job shows as the
time a woken process waits for a core, which is what ``interference_coverage.py``
measures the interval against.

    parity compare benchmarks/workloads/paced.py:Paced --baseline cpu+threads=1 \
        --target cpu+threads=1+deterministic --repeats 3
"""

from __future__ import annotations

import time
from typing import ClassVar

import torch
from torch import nn

from parity.workloads.base import RunContext, RunNumerics, StepRunner
from parity.workloads.mlp import MlpTrain

PACE_S = 0.05
TRUTH = 1.20


class _Paced(StepRunner):
    def __init__(self, inner: StepRunner, pace_s: float) -> None:
        self.inner, self.pace_s = inner, pace_s

    def step(self, i: int) -> None:
        began = time.perf_counter()
        self.inner.step(i)
        left = self.pace_s - (time.perf_counter() - began)
        if left > 0:
            time.sleep(left)

    def finish(self) -> RunNumerics:
        return self.inner.finish()


class Paced(MlpTrain):
    """The tiny MLP, paced to ``PACE_S`` a step (``TRUTH`` times that with +deterministic)."""

    name: ClassVar[str] = "paced"

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        pace = PACE_S * (TRUTH if ctx.side.deterministic else 1.0)
        return _Paced(super().make_runner(model, data, ctx), pace)
