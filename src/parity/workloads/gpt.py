"""``gpt-train`` and ``gpt-generate``: a small decoder-only transformer on byte tokens.

The text is a snapshot of the help topics that ship with CPython (``data/corpus.txt``,
see ``data/NOTICE.txt``), read as bytes: a vocabulary of 256, no tokenizer to install.
Generation uses a static key/value cache indexed by position tensors, so every decode
step has the same shapes: that suits compilers that recompile on a new shape
(``torch.compile`` with a static graph, TorchNeuron).

With ``--data FILE`` the tokens are the bytes of the team's own text instead
(``parity.workloads.sample``): consecutive windows, one batch per step.
"""

from __future__ import annotations

import math
import time
from importlib import resources
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from parity.errors import WorkloadError
from parity.model.spec import GenerateLoopName, WorkloadSpec
from parity.model.workload import Sources
from parity.workloads.base import (
    EVAL_ROWS,
    Knob,
    RunContext,
    SizeTable,
    StepRunner,
    Workload,
    batches,
)
from parity.workloads.loops import GenerateLoop, TrainRunner
from parity.workloads.sample import ByteTokens, packed, parse_data

VOCAB = 256
N_BATCHES = 16

ARCH: dict[str, dict[str, int]] = {
    "tiny": {"d_model": 64, "n_layers": 2, "n_heads": 4},
    "small": {"d_model": 256, "n_layers": 4, "n_heads": 8},
    "base": {"d_model": 768, "n_layers": 12, "n_heads": 12},
}


def corpus_bytes() -> bytes:
    return resources.files("parity.workloads").joinpath("data/corpus.txt").read_bytes()


def corpus_windows(count: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` windows of ``length`` byte tokens at seeded offsets in the corpus."""
    text = torch.frombuffer(bytearray(corpus_bytes()), dtype=torch.uint8).long()
    if length >= text.numel():
        raise WorkloadError(f"sequence length {length} exceeds the corpus ({text.numel()} bytes)")
    starts = torch.randint(0, text.numel() - length, (count,), generator=generator)
    return torch.stack([text[s : s + length] for s in starts.tolist()])


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(
        self,
        x: torch.Tensor,
        pos: torch.Tensor,
        cache: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        b, t, c = x.shape
        hd = c // self.n_heads
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, hd).permute(2, 0, 3, 1, 4)
        if cache is None:  # training and prefill without a cache: plain causal attention
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            k_cache, v_cache = cache
            k_cache.index_copy_(2, pos, k.to(k_cache.dtype))
            v_cache.index_copy_(2, pos, v.to(v_cache.dtype))
            key_pos = torch.arange(k_cache.shape[2], device=x.device)
            allowed = key_pos[None, :] <= pos[:, None]
            y = F.scaled_dot_product_attention(
                q, k_cache.to(q.dtype), v_cache.to(q.dtype), attn_mask=allowed
            )
        return self.proj(y.transpose(1, 2).reshape(b, t, c))  # type: ignore[no-any-return]


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(
        self, x: torch.Tensor, pos: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None
    ) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), pos, cache)
        return x + self.mlp(self.ln2(x))  # type: ignore[no-any-return]


class Gpt(nn.Module):
    def __init__(self, d_model: int, n_layers: int, n_heads: int, max_len: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.tok = nn.Embedding(VOCAB, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, VOCAB, bias=False)

    def forward(
        self,
        idx: torch.Tensor,
        pos: torch.Tensor | None = None,
        caches: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> torch.Tensor:
        if pos is None:
            pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for i, block in enumerate(self.blocks):
            x = block(x, pos, caches[i] if caches is not None else None)
        return self.head(self.ln_f(x))  # type: ignore[no-any-return]

    def new_caches(
        self, batch: int, length: int, like: torch.Tensor
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        hd = self.tok.embedding_dim // self.n_heads
        shape = (batch, self.n_heads, length, hd)
        return [(like.new_zeros(shape), like.new_zeros(shape)) for _ in range(len(self.blocks))]


def _sizes(**knobs: dict[str, Knob]) -> SizeTable:
    return {size: {**ARCH[size], **knobs[size]} for size in ARCH}


class GptTrain(Workload):
    name: ClassVar[str] = "gpt-train"
    kind: ClassVar[str] = "train"
    description: ClassVar[str] = "decoder-only transformer LM, AdamW, byte tokens of real text"
    optimizer_kind: ClassVar[str | None] = "adamw"
    sizes: ClassVar[SizeTable] = _sizes(
        tiny={"batch_size": 8, "seq_len": 64, "steps": 30},
        small={"batch_size": 8, "seq_len": 256, "steps": 100},
        base={"batch_size": 8, "seq_len": 1024, "steps": 200},
    )
    takes_data: ClassVar[bool] = True

    def __init__(self, spec: WorkloadSpec) -> None:
        super().__init__(spec)
        self.source = parse_data(spec.data) if spec.data else None

    def sources(self) -> Sources:
        return Sources(data=self.source.digest() if self.source else None)

    def windows(self, batches_: int, length: int) -> torch.Tensor:
        """``[batches_, batch_size, length]`` byte tokens: at seeded offsets in the
        corpus, or consecutive in ``--data`` (then one batch per step)."""
        found = self.flat_windows(batches_ * self.batch_size, length)
        return found.view(batches_, self.batch_size, length).contiguous()

    def flat_windows(self, count: int, length: int) -> torch.Tensor:
        """``[count, length]`` byte tokens, as ``windows`` takes them."""
        if self.source is not None:
            return packed(self.source, ByteTokens(), count, length)
        return corpus_windows(count, length, torch.Generator().manual_seed(self.seed + 1))

    @property
    def n_batches(self) -> int:
        return self.steps if self.source is not None else N_BATCHES

    @property
    def batches_follow_steps(self) -> bool:
        return self.source is not None

    def validate(self) -> None:
        c = self.config
        if c["d_model"] % c["n_heads"]:
            raise WorkloadError(
                f"d_model={c['d_model']} must be a multiple of n_heads={c['n_heads']}"
            )

    def build_model(self) -> nn.Module:
        c = self.config
        return Gpt(c["d_model"], c["n_layers"], c["n_heads"], max_len=self.max_len)

    @property
    def max_len(self) -> int:
        assert self.seq_len is not None
        return self.seq_len

    def make_data(self) -> dict[str, torch.Tensor]:
        assert self.seq_len is not None
        # the evaluation: a batch, or more windows where a batch holds under
        # ``EVAL_ROWS`` positions (a top-1 gate needs them)
        evals = max(self.batch_size, math.ceil(EVAL_ROWS / self.seq_len))
        train = self.n_batches * self.batch_size
        windows = self.flat_windows(train + evals, self.seq_len + 1)
        tokens = windows[:train].view(self.n_batches, self.batch_size, -1).contiguous()
        return {"tokens": tokens, "eval_tokens": windows[train:].contiguous()}

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        tokens, eval_tokens = data["tokens"], data["eval_tokens"]

        def loss_fn(m: nn.Module, i: int) -> torch.Tensor:
            batch = batches(tokens, i)
            logits = m(batch[:, :-1])
            return F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))

        return TrainRunner(
            model, ctx, loss_fn=loss_fn, eval_fn=lambda m: m(eval_tokens[:, :-1]), lr=3e-4
        )

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        batch = data["tokens"][0]
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        return {"logits": logits, "loss": loss}


class GenerateRunner(GenerateLoop):
    """Greedy decoding with the static key/value cache of ``Gpt``."""

    def score(self, sequence: torch.Tensor) -> torch.Tensor | None:
        return self.model(sequence)  # type: ignore[no-any-return]

    def generate(
        self, prompt: torch.Tensor, stamps: list[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy decoding; with ``stamps``, each token is synchronised and time-stamped
        (ns since the start), as a streaming server hands each token out."""
        gpt: Any = getattr(self.model, "_orig_mod", self.model)
        b, p = prompt.shape
        sync = self.ctx.synchronize
        t0 = time.perf_counter_ns()
        with torch.inference_mode(), self.ctx.autocast():
            caches = gpt.new_caches(b, p + self.new_tokens, gpt.tok.weight)
            pos = torch.arange(p, device=prompt.device)
            logits = self.model(prompt, pos, caches)[:, -1]
            first_logits = logits
            out = [self.pick(logits)]
            if stamps is not None:
                sync()
                stamps.append(time.perf_counter_ns() - t0)
            for t in range(1, self.new_tokens):
                pos = torch.arange(p + t - 1, p + t, device=prompt.device)
                logits = self.model(out[-1][:, None], pos, caches)[:, -1]
                out.append(self.pick(logits))
                if stamps is not None:
                    sync()
                    stamps.append(time.perf_counter_ns() - t0)
        return torch.stack(out, dim=1), first_logits


class GptGenerate(GptTrain):
    name: ClassVar[str] = "gpt-generate"
    kind: ClassVar[str] = "generate"
    generate_loops: ClassVar[tuple[GenerateLoopName, ...]] = ("parity",)
    description: ClassVar[str] = "greedy decoding, frozen weights, fixed output length"
    sizes: ClassVar[SizeTable] = _sizes(
        tiny={"batch_size": 4, "seq_len": 32, "steps": 10, "new_tokens": 32},
        small={"batch_size": 8, "seq_len": 128, "steps": 20, "new_tokens": 64},
        base={"batch_size": 8, "seq_len": 512, "steps": 20, "new_tokens": 128},
    )

    @property
    def max_len(self) -> int:
        assert self.seq_len is not None
        return self.seq_len + int(self.config["new_tokens"])

    def make_data(self) -> dict[str, torch.Tensor]:
        assert self.seq_len is not None
        return {"prompts": self.windows(self.n_batches, self.seq_len)}

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        return GenerateRunner(model, data["prompts"], ctx, int(self.config["new_tokens"]))

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        # the prefill: one forward over the first batch of prompts
        return {"logits": model(data["prompts"][0])}

    def items_per_step(self) -> dict[str, int]:
        return {
            "samples": self.batch_size,
            "tokens": self.batch_size * int(self.config["new_tokens"]),
        }
