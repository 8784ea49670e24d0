"""A user training workload for parity: a tabular classifier with categorical embeddings.

Run it against bf16 autocast on the CPU (or any side spec):

    parity compare examples/tabular_train.py:TabularTrain --target cpu+bf16

The file follows the protocol in docs/workloads.md: a ``parity.workloads.Workload``
subclass with ``name``, ``kind``, ``description`` and ``sizes``; the model is built on the
CPU under parity's seed (``build_model``), the data too (``make_data``); parity freezes
both, so every side trains exactly the same weights on exactly the same batches.
``make_runner`` returns the unit of work to time, and ``probe`` the outputs parity checks
against an fp64 reference.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from parity.workloads import RunContext, StepRunner, Workload
from parity.workloads.loops import TrainRunner

N_BATCHES = 16
EVAL_ROWS = 512


class TabularNet(nn.Module):
    """Embeddings for categorical columns, concatenated with numeric ones, then an MLP."""

    def __init__(self, cardinalities: list[int], numeric: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(c, dim) for c in cardinalities)
        self.norm = nn.LayerNorm(numeric)
        width = dim * len(cardinalities) + numeric
        self.mlp = nn.Sequential(
            nn.Linear(width, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, 2),
        )

    def forward(self, categorical: torch.Tensor, numeric: torch.Tensor) -> torch.Tensor:
        columns = [emb(categorical[:, i]) for i, emb in enumerate(self.embeddings)]
        return self.mlp(torch.cat([*columns, self.norm(numeric)], dim=1))  # type: ignore[no-any-return]


class TabularTrain(Workload):
    name: ClassVar[str] = "tabular-train"
    kind: ClassVar[str] = "train"
    description: ClassVar[str] = "tabular classifier, categorical embeddings + MLP, AdamW"
    # per size: the architecture config (free-form, enters the fingerprint) plus
    # batch_size and steps; no seq_len, as this model has no sequence
    sizes: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {
            "columns": 4,
            "cardinality": 50,
            "numeric": 8,
            "dim": 8,
            "hidden": 64,
            "batch_size": 128,
            "steps": 20,
        },
        "small": {
            "columns": 8,
            "cardinality": 1000,
            "numeric": 32,
            "dim": 16,
            "hidden": 512,
            "batch_size": 512,
            "steps": 50,
        },
        "base": {
            "columns": 26,
            "cardinality": 100_000,
            "numeric": 13,
            "dim": 64,
            "hidden": 2048,
            "batch_size": 2048,
            "steps": 100,
        },
    }

    def build_model(self) -> nn.Module:
        c = self.config
        return TabularNet([c["cardinality"]] * c["columns"], c["numeric"], c["dim"], c["hidden"])

    def make_data(self) -> dict[str, torch.Tensor]:
        c = self.config
        n = (N_BATCHES + 1) * self.batch_size
        categorical = torch.randint(0, c["cardinality"], (n, c["columns"]))
        numeric = torch.randn(n, c["numeric"])
        # the label depends on both kinds of column, so the model has something to learn
        signal = numeric[:, 0] + (categorical[:, 0] % 3 == 0).float() - 0.5
        labels = (signal + 0.3 * torch.randn(n) > 0).long()

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(N_BATCHES + 1, self.batch_size, *t.shape[1:])

        cat, num, y = split(categorical), split(numeric), split(labels)
        # the evaluation: the last batch and rows drawn after it, enough rows for parity's
        # top-1 gate to decide (it needs 299 where the sides' top-1 is not a near tie)
        more = max(0, EVAL_ROWS - self.batch_size)
        more_cat = torch.randint(0, c["cardinality"], (more, c["columns"]))
        more_num = torch.randn(more, c["numeric"])
        return {
            "categorical": cat[:-1].contiguous(),
            "numeric": num[:-1].contiguous(),
            "labels": y[:-1].contiguous(),
            "eval_categorical": torch.cat([cat[-1], more_cat]).contiguous(),
            "eval_numeric": torch.cat([num[-1], more_num]).contiguous(),
        }

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        def loss_fn(m: nn.Module, i: int) -> torch.Tensor:
            j = i % N_BATCHES  # plain integer indexing: choosing a batch never syncs
            logits = m(data["categorical"][j], data["numeric"][j])
            return F.cross_entropy(logits, data["labels"][j])

        def eval_fn(m: nn.Module) -> torch.Tensor:
            return m(data["eval_categorical"], data["eval_numeric"])  # type: ignore[no-any-return]

        return TrainRunner(model, ctx, loss_fn=loss_fn, eval_fn=eval_fn, lr=1e-3)

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        logits = model(data["categorical"][0], data["numeric"][0])
        return {"logits": logits, "loss": F.cross_entropy(logits, data["labels"][0])}
