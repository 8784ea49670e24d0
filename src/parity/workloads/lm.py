"""Language-model work shared by ``hf:ARCH`` and ``hf:PATH``: training objectives,
greedy decoding with the model's key/value cache, and named inference outputs.

Greedy decoding runs one of two loops (``--generate-loop``): parity's own, a forward per
token with the model's key/value cache (the default), or the model's own ``generate()``
(``hf``), which is what users and other tools time. Both decode ``new_tokens`` tokens
without stopping at an end-of-sequence token, so that every step decodes the same
number of tokens on both sides, and both stamp each token after the device's
synchronize: parity's loop once the token is chosen, ``generate()`` through a logits
processor (``TokenStamps``) once the token's logits are ready (choosing it is one
argmax more). Greedy, both give the same tokens.

A workload says where its tokens come from (``tokens``), how many batches it keeps
(``n_batches``) and what its model is (``objective``, ``vocab``, ``mask_id``,
``decoder_start``); the mixins here make the data, the runner and the probe. The loss
is computed by parity (``F.cross_entropy`` on the logits), not by transformers' loss
functions, which upcast to float32 and would blunt the fp64 reference.
"""

from __future__ import annotations

import inspect
import math
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from parity.errors import WorkloadError
from parity.model.spec import GenerateLoopName
from parity.workloads.base import EVAL_ROWS, RunContext, StepRunner, Workload, batches
from parity.workloads.loops import GenerateLoop, Named, NamedInferRunner, TrainRunner

IGNORE = -100
MASK_FRACTION = 0.15
#: what "train" means for a model: its objective
OBJECTIVES = ("causal", "masked", "seq2seq", "classify")


def logits_of(out: Any) -> torch.Tensor:
    logits: torch.Tensor = out.logits
    return logits


def _cache(out: Any) -> Any:
    """The key/value cache a model returned, under its old or new name."""
    for name in ("cache", "past_key_values"):
        if name in out:
            return out[name]
    return None


def _ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE
    )


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One embedding per row: the mean of the hidden states where ``mask`` is 1."""
    weights = mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1)


class LmWorkload(Workload):
    """What the language-model mixins need from a workload."""

    @property
    @abstractmethod
    def objective(self) -> str:
        """causal | masked | seq2seq | classify"""

    @property
    @abstractmethod
    def vocab(self) -> int: ...

    @property
    def mask_id(self) -> int:
        """The ``[MASK]`` id of the masked objective (the vocabulary's last id)."""
        return self.vocab - 1

    @property
    def decoder_start(self) -> int | None:
        """An encoder-decoder's first decoder token; None for a decoder-only model."""
        return None

    @property
    @abstractmethod
    def n_batches(self) -> int:
        """How many batches the data holds (steps cycle through them)."""

    @abstractmethod
    def tokens(self, count: int, length: int) -> torch.Tensor:
        """``count`` windows of ``length`` token ids, ``[count, length]`` int64."""

    def labels_of(self, windows: torch.Tensor) -> torch.Tensor:
        """Classification labels: does the window hold more spaces than the median?"""
        spaces = (windows == ord(" ")).sum(dim=1)
        return (spaces > spaces.median()).long()

    def shaped(self, t: torch.Tensor, batches_: int) -> torch.Tensor:
        return t.view(batches_, self.batch_size, *t.shape[1:]).contiguous()


class LmTrain(LmWorkload):
    """Training: AdamW over a fixed batch order; the objective follows the model."""

    optimizer_kind: ClassVar[str | None] = "adamw"

    def eval_windows(self, positions: int) -> int:
        """The evaluation's windows: a batch, or more where a batch holds under
        ``EVAL_ROWS`` rows of logits (``positions`` a window: a top-1 gate needs them)."""
        return max(self.batch_size, math.ceil(EVAL_ROWS / max(positions, 1)))

    def make_data(self) -> dict[str, torch.Tensor]:
        assert self.seq_len is not None
        nb, s = self.n_batches, self.seq_len
        train = nb * self.batch_size

        def split(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.shaped(t[:train], nb), t[train:].contiguous()

        if self.objective == "causal":
            windows = self.tokens(train + self.eval_windows(s), s + 1)
            ids, eval_ids = split(windows[:, :-1])
            return {
                "input_ids": ids,
                "labels": split(windows[:, 1:])[0],
                "eval_ids": eval_ids,
            }
        if self.objective == "seq2seq":
            target = max(2, s // 2)
            windows = self.tokens(train + self.eval_windows(target), s + target)
            # the decoder starts from decoder_start_token_id and predicts the next text
            labels = windows[:, s:]
            start = torch.full_like(labels[:, :1], self.decoder_start or 0)
            decoder = torch.cat([start, labels[:, :-1]], dim=1)
            (w, eval_w), (d, eval_d) = split(windows[:, :s]), split(decoder)
            return {
                "input_ids": w,
                "decoder_input_ids": d,
                "labels": split(labels)[0],
                "eval_ids": eval_w,
                "eval_decoder_ids": eval_d,
            }
        n = train + self.eval_windows(s if self.objective == "masked" else 1)
        windows = self.tokens(n, s)
        if self.objective == "masked":
            mask = torch.rand(windows.shape) < MASK_FRACTION
            mask[torch.arange(n), torch.randint(0, s, (n,))] = True  # at least one per row
            inputs = windows.masked_fill(mask, self.mask_id)
            labels = windows.masked_fill(~mask, IGNORE)
        else:  # classify
            inputs, labels = windows, self.labels_of(windows)
        ids, eval_ids = split(inputs)
        return {"input_ids": ids, "labels": split(labels)[0], "eval_ids": eval_ids}

    def forward(self, m: nn.Module, data: dict[str, torch.Tensor], i: int) -> torch.Tensor:
        """The logits of batch ``i``."""
        kwargs: dict[str, Any] = {"input_ids": batches(data["input_ids"], i)}
        if "decoder_input_ids" in data:
            kwargs["decoder_input_ids"] = batches(data["decoder_input_ids"], i)
        if self.objective != "classify":
            kwargs["use_cache"] = False
        return logits_of(m(**kwargs))

    def loss(self, m: nn.Module, data: dict[str, torch.Tensor], i: int) -> torch.Tensor:
        return _ce(self.forward(m, data, i), batches(data["labels"], i))

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        def eval_fn(m: nn.Module) -> torch.Tensor:
            kwargs: dict[str, Any] = {"input_ids": data["eval_ids"]}
            if "eval_decoder_ids" in data:
                kwargs["decoder_input_ids"] = data["eval_decoder_ids"]
            return logits_of(m(**kwargs))

        return TrainRunner(
            model,
            ctx,
            loss_fn=lambda m, i: self.loss(m, data, i),
            eval_fn=eval_fn,
            lr=3e-4,
        )

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        logits = self.forward(model, data, 0)
        return {"logits": logits, "loss": _ce(logits, data["labels"][0])}


class TokenStamps:
    """A logits processor for ``generate()``: it passes the scores on unchanged, keeps the
    first token's (the prefill logits) and, with ``stamps``, synchronises the device and
    stamps each token (ns since ``t0``); with ``seen``, hands it each token's scores (the
    runner's margins, never in a timed step). Appended after generate's own processors."""

    def __init__(
        self,
        synchronize: Callable[[], None],
        t0: int,
        stamps: list[int] | None,
        seen: Callable[[torch.Tensor], object] | None = None,
    ):
        self.synchronize = synchronize
        self.t0 = t0
        self.stamps = stamps
        self.seen = seen
        self.first: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.first is None:
            self.first = scores
        if self.seen is not None:
            self.seen(scores)
        if self.stamps is not None:
            self.synchronize()
            self.stamps.append(time.perf_counter_ns() - self.t0)
        return scores


class LmGenerateRunner(GenerateLoop):
    """Greedy decoding of a fixed number of tokens with the model's key/value cache, by
    parity's own loop or the model's ``generate()`` (``loop``)."""

    def __init__(
        self,
        model: nn.Module,
        prompts: torch.Tensor,
        ctx: RunContext,
        new_tokens: int,
        decoder_start: int | None,
        loop: GenerateLoopName = "parity",
    ) -> None:
        super().__init__(model, prompts, ctx, new_tokens)
        self.decoder_start = decoder_start  # None: decoder-only
        self.loop = loop
        # transformers 5.x renamed ``past_key_values`` to ``cache`` (the old name warns)
        forward = getattr(model, "_orig_mod", model).forward
        params = inspect.signature(forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        self.generate_settings = self._generate_settings() if loop == "hf" else {}

    def _generate_settings(self) -> dict[str, Any]:
        """``generate()``'s settings beside the model's generation config: greedy, of
        fixed length. Given as arguments, they win over that config (a config passed
        whole would have its unset values, ``eos_token_id`` among them, filled from the
        model's); every other setting of the model's config applies, as for its users."""
        if self.ctx.side.compile or hasattr(self.model, "_orig_mod"):
            raise WorkloadError(
                f"side {self.ctx.side}: --generate-loop hf times the model's generate(), which "
                "calls the uncompiled model: drop +compile, or use --generate-loop parity"
            )
        if not hasattr(self.model, "generate"):
            raise WorkloadError(
                f"{type(self.model).__name__} has no generate(): --generate-loop hf needs a "
                "transformers generation model; use --generate-loop parity"
            )
        return {
            "do_sample": False,
            "num_beams": 1,
            "max_new_tokens": self.new_tokens,
            "min_new_tokens": None,
            "eos_token_id": None,  # a fixed number of tokens, as parity's loop decodes
        }

    def _call(self, prompt: torch.Tensor, last: torch.Tensor | None, state: Any) -> Any:
        """The prefill (``last`` None) or one decoding step from ``state``."""
        if self.decoder_start is None:  # decoder-only: the prompt, then one token at a time
            if last is None:
                return self.model(input_ids=prompt, use_cache=True)
            kwargs = {self.cache_arg: state[0]}
            return self.model(input_ids=last[:, None], use_cache=True, **kwargs)
        if last is None:  # encoder-decoder: encode once; the decoder starts from its token
            start = torch.full_like(prompt[:, :1], self.decoder_start)
            return self.model(input_ids=prompt, decoder_input_ids=start, use_cache=True)
        past, encoded = state
        return self.model(
            encoder_outputs=encoded,
            decoder_input_ids=last[:, None],
            use_cache=True,
            **{self.cache_arg: past},
        )

    def score(self, sequence: torch.Tensor) -> torch.Tensor | None:
        if self.decoder_start is not None:
            return None  # an encoder-decoder: its prompt is not the decoder's context
        return logits_of(self.model(input_ids=sequence, use_cache=False))

    def generate(
        self, prompt: torch.Tensor, stamps: list[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy decoding; with ``stamps``, each token is synchronised and time-stamped
        (ns since the start), as a streaming server hands each token out."""
        if self.loop == "hf":
            return self.generate_hf(prompt, stamps)
        sync = self.ctx.synchronize
        t0 = time.perf_counter_ns()
        tokens: list[torch.Tensor] = []
        with torch.inference_mode(), self.ctx.autocast():
            out = self._call(prompt, None, None)
            first_logits = out.logits[:, -1]
            encoded = None if self.decoder_start is None else (out.encoder_last_hidden_state,)
            for t in range(self.new_tokens):
                if t:
                    out = self._call(prompt, tokens[-1], (_cache(out), encoded))
                tokens.append(self.pick(out.logits[:, -1]))
                if stamps is not None:
                    sync()
                    stamps.append(time.perf_counter_ns() - t0)
        return torch.stack(tokens, dim=1), first_logits

    def generate_hf(
        self, prompt: torch.Tensor, stamps: list[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The model's own ``generate()``, as a user calls it (the prompt and its attention
        mask), timed from the call; the tokens it added and the first token's logits."""
        from transformers import LogitsProcessorList

        t0 = time.perf_counter_ns()
        seen = self.pick if self.recording is not None else None  # pick records margins
        stamper = TokenStamps(self.ctx.synchronize, t0, stamps, seen)
        with torch.inference_mode(), self.ctx.autocast():
            generate: Callable[..., torch.Tensor] = self.model.generate  # type: ignore[assignment]
            out = generate(
                input_ids=prompt,
                attention_mask=torch.ones_like(prompt),
                logits_processor=LogitsProcessorList([stamper]),
                **self.generate_settings,
            )
        assert stamper.first is not None
        return out[:, -self.new_tokens :], stamper.first


class LmGenerate(LmWorkload):
    """Greedy decoding of ``new_tokens`` tokens from prompts of ``seq_len`` tokens, by
    parity's own loop or the model's ``generate()`` (``--generate-loop``)."""

    new_tokens: int | None
    generate_loops: ClassVar[tuple[GenerateLoopName, ...]] = ("parity", "hf")

    def make_data(self) -> dict[str, torch.Tensor]:
        assert self.seq_len is not None
        prompts = self.tokens(self.n_batches * self.batch_size, self.seq_len)
        return {"prompts": self.shaped(prompts, self.n_batches)}

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        assert self.new_tokens is not None
        return LmGenerateRunner(
            model, data["prompts"], ctx, self.new_tokens, self.decoder_start, self.spec.loop
        )

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        model.eval()  # as the runner runs it
        prompt = data["prompts"][0]
        start = self.decoder_start
        if start is None:
            return {"logits": logits_of(model(input_ids=prompt, use_cache=False))}
        decoder = torch.full_like(prompt[:, :1], start)
        return {
            "logits": logits_of(model(input_ids=prompt, decoder_input_ids=decoder, use_cache=False))
        }

    def items_per_step(self) -> dict[str, int]:
        assert self.new_tokens is not None
        return {"samples": self.batch_size, "tokens": self.batch_size * self.new_tokens}


class LmInfer(LmWorkload):
    """Forward passes over rows of named inputs (``input_ids``, ``attention_mask``);
    ``outputs`` names what the model returns (embeddings, logits, hidden states)."""

    @abstractmethod
    def rows(self, count: int) -> dict[str, torch.Tensor]:
        """``count`` rows of named inputs, each ``[count, seq_len]``."""

    @abstractmethod
    def outputs(self, out: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The named outputs of one forward pass."""

    def make_data(self) -> dict[str, torch.Tensor]:
        rows = self.rows(self.n_batches * self.batch_size)
        return {k: self.shaped(v, self.n_batches) for k, v in rows.items()}

    def forward(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> Named:
        return self.outputs(model(**batch), batch)

    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        return NamedInferRunner(model, data, ctx, forward=self.forward)

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        model.eval()  # as the runner runs it
        return dict(self.forward(model, {k: v[0] for k, v in data.items()}))
