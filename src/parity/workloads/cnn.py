"""``cnn-infer``: inference of a small residual convolutional net on seeded images."""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import nn

from parity.errors import WorkloadError
from parity.workloads.base import EVAL_ROWS, RunContext, SizeTable, StepRunner, Workload
from parity.workloads.loops import InferRunner

N_BATCHES = 8


def conv_bn(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c_out)
    )


class Residual(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.a = conv_bn(channels, channels)
        self.b = conv_bn(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.b(torch.relu(self.a(x))))


class Cnn(nn.Module):
    def __init__(self, width: int, blocks: int, classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, width), nn.ReLU()]
        c = width
        for stage in range(3):
            c_out = width * 2**stage
            if stage:
                layers += [conv_bn(c, c_out, stride=2), nn.ReLU()]
            layers += [Residual(c_out) for _ in range(blocks)]
            c = c_out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(x)).flatten(1))  # type: ignore[no-any-return]


class CnnInfer(Workload):
    name: ClassVar[str] = "cnn-infer"
    kind: ClassVar[str] = "infer"
    description: ClassVar[str] = "residual CNN inference on seeded images"
    sizes: ClassVar[SizeTable] = {
        "tiny": {
            "width": 16,
            "blocks": 1,
            "image": 32,
            "classes": 10,
            "batch_size": 16,
            "steps": 20,
        },
        "small": {
            "width": 64,
            "blocks": 2,
            "image": 64,
            "classes": 100,
            "batch_size": 32,
            "steps": 30,
        },
        "base": {
            "width": 256,
            "blocks": 4,
            "image": 128,
            "classes": 1000,
            "batch_size": 32,
            "steps": 50,
        },
    }

    def validate(self) -> None:
        if self.config["image"] < 8:
            raise WorkloadError("cnn-infer needs image >= 8 (three stride-2 stages)")

    def build_model(self) -> nn.Module:
        c = self.config
        return Cnn(c["width"], c["blocks"], c["classes"]).eval()

    def make_data(self) -> dict[str, torch.Tensor]:
        s = self.config["image"]
        # enough batches for the evaluation's rows (``finish`` forwards them again)
        n = max(N_BATCHES, math.ceil(EVAL_ROWS / self.batch_size))
        return {"images": torch.randn(n, self.batch_size, 3, s, s)}

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        return InferRunner(model, data["images"], ctx, forward=lambda m, b: m(b))

    def items_per_step(self) -> dict[str, int]:
        return {"samples": self.batch_size, "tokens": 0}

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"logits": model(data["images"][0])}
