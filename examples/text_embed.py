"""A user workload with named inputs and outputs: a small text encoder, batch inference.

    parity compare examples/text_embed.py:TextEmbed --target cpu+bf16
    parity compare examples/text_embed.py:TextEmbed --data notes.jsonl:text --target cpu+bf16

The model takes two tensors by name, ``input_ids`` and ``attention_mask``, and returns
two outputs by name: ``embeddings`` (its hidden states mean-pooled over the real tokens)
and ``logits`` (a topic classifier on top). ``NamedInferRunner`` passes each batch as
keyword arguments and records both outputs; the names tell the verdict their kinds
(``*embeddings``, ``*logits``). With ``--data`` the rows are the file's documents as
UTF-8 bytes; without, seeded token ids of seeded lengths.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from parity.model.spec import WorkloadSpec
from parity.model.workload import Sources
from parity.workloads import RunContext, StepRunner, Workload
from parity.workloads.loops import NamedInferRunner
from parity.workloads.sample import ByteTokens, parse_data, rows

VOCAB = 256  # bytes


class Block(nn.Module):
    """Masked self-attention (padding never attended to), then a SiLU feed-forward."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.attn_in = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 3 * dim))
        self.attn_out = nn.Linear(dim, dim)
        self.ff = nn.Sequential(
            nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, dim)
        )

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.attn_in(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        x = x + self.attn_out(y.transpose(1, 2).reshape(b, t, c))
        return x + self.ff(x)  # type: ignore[no-any-return]


class TextEncoder(nn.Module):
    def __init__(self, dim: int, depth: int, heads: int, classes: int, max_len: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        keep = attention_mask.bool()
        x = self.tok(input_ids) + self.pos(torch.arange(input_ids.shape[1], device=keep.device))
        for block in self.blocks:
            x = block(x, keep)
        h = self.norm(x)
        weights = attention_mask.to(h.dtype).unsqueeze(-1)
        embeddings = (h * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1)
        return {"embeddings": embeddings, "logits": self.head(embeddings)}


class TextEmbed(Workload):
    name: ClassVar[str] = "text-embed"
    kind: ClassVar[str] = "infer"
    description: ClassVar[str] = "text encoder, named inputs (ids, mask), embeddings and logits"
    takes_data: ClassVar[bool] = True  # reads --data through parity.workloads.sample
    sizes: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"dim": 64, "depth": 2, "heads": 4, "classes": 8, "batch_size": 8,
                 "seq_len": 32, "steps": 10},
        "small": {"dim": 256, "depth": 4, "heads": 4, "classes": 32, "batch_size": 32,
                  "seq_len": 128, "steps": 30},
        "base": {"dim": 768, "depth": 12, "heads": 12, "classes": 128, "batch_size": 32,
                 "seq_len": 512, "steps": 50},
    }  # fmt: skip

    def __init__(self, spec: WorkloadSpec) -> None:
        super().__init__(spec)
        self.source = parse_data(spec.data) if spec.data else None

    def sources(self) -> Sources:
        # the file's digest enters the fingerprint's data part and the frozen cache's key
        return Sources(data=self.source.digest() if self.source else None)

    def build_model(self) -> nn.Module:
        c = self.config
        assert self.seq_len is not None
        return TextEncoder(c["dim"], c["depth"], c["heads"], c["classes"], self.seq_len)

    def make_data(self) -> dict[str, torch.Tensor]:
        assert self.seq_len is not None
        n, s = self.steps * self.batch_size, self.seq_len  # one batch per step
        if self.source is not None:
            found = rows(self.source, ByteTokens(), n, s)
        else:
            lengths = torch.randint(s // 4, s + 1, (n, 1))
            found = {
                "input_ids": torch.randint(0, VOCAB, (n, s)),
                "attention_mask": (torch.arange(s)[None, :] < lengths).long(),
            }
        return {k: v.view(self.steps, self.batch_size, s) for k, v in found.items()}

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        # each batch goes in as keyword arguments; the model's dict comes back as it is
        return NamedInferRunner(model, data, ctx, forward=lambda m, batch: m(**batch))

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = model(**{k: v[0] for k, v in data.items()})
        return out
