"""A user inference workload for parity: a small vision transformer, batch inference.

    parity compare examples/vit_infer.py:make_workload --target cpu+bf16

The name after the colon may be a ``Workload`` subclass or, as here, a factory: any
callable that takes the ``WorkloadSpec`` and returns a ``Workload``. A factory can pick
a class or adjust the spec; this one only checks the patch size fits the image.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from parity.errors import WorkloadError
from parity.model.spec import WorkloadSpec
from parity.workloads import RunContext, StepRunner, Workload
from parity.workloads.loops import InferRunner

N_BATCHES = 8


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))  # type: ignore[no-any-return]


class Vit(nn.Module):
    def __init__(
        self, image: int, patch: int, dim: int, depth: int, heads: int, classes: int
    ) -> None:
        super().__init__()
        self.patchify = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patchify(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])  # type: ignore[no-any-return]


class VitInfer(Workload):
    name: ClassVar[str] = "vit-infer"
    kind: ClassVar[str] = "infer"
    description: ClassVar[str] = "small vision transformer, batch inference, seeded images"
    sizes: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {
            "image": 32,
            "patch": 8,
            "dim": 64,
            "depth": 2,
            "heads": 4,
            "classes": 10,
            "batch_size": 8,
            "steps": 20,
        },
        "small": {
            "image": 64,
            "patch": 8,
            "dim": 192,
            "depth": 6,
            "heads": 3,
            "classes": 100,
            "batch_size": 32,
            "steps": 50,
        },
        "base": {
            "image": 224,
            "patch": 16,
            "dim": 768,
            "depth": 12,
            "heads": 12,
            "classes": 1000,
            "batch_size": 32,
            "steps": 50,
        },
    }

    def validate(self) -> None:
        c = self.config
        if c["image"] % c["patch"]:
            raise WorkloadError(f"image={c['image']} must be a multiple of patch={c['patch']}")
        if c["dim"] % c["heads"]:
            raise WorkloadError(f"dim={c['dim']} must be a multiple of heads={c['heads']}")

    def build_model(self) -> nn.Module:
        c = self.config
        return Vit(c["image"], c["patch"], c["dim"], c["depth"], c["heads"], c["classes"])

    def make_data(self) -> dict[str, torch.Tensor]:
        size = self.config["image"]
        return {"images": torch.randn(N_BATCHES, self.batch_size, 3, size, size)}

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        return InferRunner(model, data["images"], ctx, forward=lambda m, batch: m(batch))

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"logits": model(data["images"][0])}


def make_workload(spec: WorkloadSpec) -> Workload:
    """The factory parity calls with the spec from the command line."""
    return VitInfer(spec)
