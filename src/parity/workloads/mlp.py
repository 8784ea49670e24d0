"""``mlp-train``: an MLP classifier trained with AdamW on seeded Gaussian clusters."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from parity.workloads.base import EVAL_ROWS, RunContext, SizeTable, StepRunner, Workload
from parity.workloads.loops import TrainRunner

N_BATCHES = 16


class Mlp(nn.Module):
    def __init__(self, in_features: int, hidden: int, depth: int, classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.GELU()]
            width = hidden
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))  # type: ignore[no-any-return]


class MlpTrain(Workload):
    name: ClassVar[str] = "mlp-train"
    kind: ClassVar[str] = "train"
    description: ClassVar[str] = "MLP classifier, AdamW, seeded Gaussian-cluster data"
    optimizer_kind: ClassVar[str | None] = "adamw"
    sizes: ClassVar[SizeTable] = {
        "tiny": {
            "in_features": 128,
            "hidden": 256,
            "depth": 3,
            "classes": 10,
            "batch_size": 64,
            "steps": 40,
        },
        "small": {
            "in_features": 512,
            "hidden": 2048,
            "depth": 4,
            "classes": 100,
            "batch_size": 128,
            "steps": 100,
        },
        "base": {
            "in_features": 1024,
            "hidden": 4096,
            "depth": 6,
            "classes": 1000,
            "batch_size": 256,
            "steps": 200,
        },
    }

    def build_model(self) -> nn.Module:
        c = self.config
        return Mlp(c["in_features"], c["hidden"], c["depth"], c["classes"])

    def make_data(self) -> dict[str, torch.Tensor]:
        c = self.config
        n = (N_BATCHES + 1) * self.batch_size
        centers = torch.randn(c["classes"], c["in_features"]) * 0.12
        labels = torch.randint(0, c["classes"], (n,))
        x = centers[labels] + torch.randn(n, c["in_features"])
        # the evaluation holds at least ``EVAL_ROWS`` rows (a top-1 gate needs them): the
        # last batch and rows drawn after it, so the training batches stay as they were
        more = max(0, EVAL_ROWS - self.batch_size)
        extra = torch.randint(0, c["classes"], (more,))
        extra_x = centers[extra] + torch.randn(more, c["in_features"])
        x = x.view(N_BATCHES + 1, self.batch_size, c["in_features"])
        labels = labels.view(N_BATCHES + 1, self.batch_size)
        return {
            "x": x[:-1].contiguous(),
            "y": labels[:-1].contiguous(),
            "eval_x": torch.cat([x[-1], extra_x]).contiguous(),
        }

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        x, y, eval_x = data["x"], data["y"], data["eval_x"]

        def loss_fn(m: nn.Module, i: int) -> torch.Tensor:
            j = i % x.shape[0]
            return F.cross_entropy(m(x[j]), y[j])

        return TrainRunner(model, ctx, loss_fn=loss_fn, eval_fn=lambda m: m(eval_x), lr=1e-3)

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        logits = model(data["x"][0])
        return {"logits": logits, "loss": F.cross_entropy(logits, data["y"][0])}
