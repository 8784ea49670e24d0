"""Runners shared by the built-in workloads: a training loop and an inference loop.

Inputs and outputs are named as the model has them: ``NamedInferRunner`` passes a dict
of tensors (``input_ids``, ``attention_mask``, ``pixel_values``, ...) and records a dict
of named outputs (``logits``, ``embeddings``, ...); ``InferRunner`` is its one-tensor
case, whose output is called ``logits``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import torch
from torch import nn

from parity.model.numerics import (
    EVERY_FORCED,
    EVERY_FORCED_SKETCH,
    EVERY_SKETCH,
    EVERY_TOKENS,
    EVERY_TOP1,
    FINAL,
)
from parity.model.spec import GenerateLoopName
from parity.sketch import sketch
from parity.workloads.base import EVAL_ROWS, RunContext, RunNumerics, StepRunner, batches

LossFn = Callable[[nn.Module, int], torch.Tensor]
Named = Mapping[str, torch.Tensor]


class TrainRunner(StepRunner):
    """AdamW steps over a fixed batch order; losses stay on the device until ``finish``.

    ``loss_fn(model, i)`` computes the loss of step ``i`` (it picks its batch with plain
    integer indexing, a view, so that choosing a batch never syncs with the host).

    The loss of each step is kept as a detached device tensor, so that reading it does
    not add a host sync inside the timed step. ``finish`` evaluates the trained model on
    a fixed evaluation batch (``eval_fn``), whose outputs the numerics compare too: a
    tensor is recorded as ``eval_logits``, a dict of named tensors as ``eval_NAME``.
    Losses come back as float64 (exact for any side; the fp64 reference's own).
    """

    def __init__(
        self,
        model: nn.Module,
        ctx: RunContext,
        *,
        loss_fn: LossFn,
        eval_fn: Callable[[nn.Module], torch.Tensor | Named],
        lr: float,
    ) -> None:
        self.model = model
        self.ctx = ctx
        self.loss_fn = loss_fn
        self.eval_fn = eval_fn
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        self.losses: list[torch.Tensor] = []

    def step(self, i: int) -> None:
        self.optimize(lambda: self.loss_fn(self.model, i))

    def optimize(self, loss_of: Callable[[], torch.Tensor]) -> None:
        """One AdamW step on the loss ``loss_of()`` computes under the side's autocast."""
        self.optimizer.zero_grad(set_to_none=True)
        with self.ctx.autocast():
            loss = loss_of()
        loss.backward()  # type: ignore[no-untyped-call]
        self.optimizer.step()
        self.losses.append(loss.detach())

    def finish(self) -> RunNumerics:
        self.model.eval()
        with torch.no_grad(), self.ctx.autocast():
            out = self.eval_fn(self.model)
        named = {"logits": out} if isinstance(out, torch.Tensor) else out
        losses = torch.stack(self.losses).double().cpu().tolist() if self.losses else []
        return RunNumerics(losses=losses, outputs=to_cpu(named, prefix="eval_"))


class NamedTrainRunner(TrainRunner):
    """``TrainRunner`` over named batches: ``data`` holds ``[n_batches, batch, ...]``
    tensors by name; step ``i`` computes ``loss(model, batch)`` on batch ``i`` of each (a
    view), and ``step_batch`` on a batch a loader delivered (``Workload.make_loader``)."""

    def __init__(
        self,
        model: nn.Module,
        data: Named,
        ctx: RunContext,
        *,
        loss: Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor],
        eval_fn: Callable[[nn.Module], torch.Tensor | Named],
        lr: float,
    ) -> None:
        self.data = dict(data)
        self.loss = loss
        super().__init__(
            model, ctx, loss_fn=lambda m, i: loss(m, self.batch(i)), eval_fn=eval_fn, lr=lr
        )

    def batch(self, i: int) -> dict[str, torch.Tensor]:
        return {k: batches(v, i) for k, v in self.data.items()}

    def step_batch(self, i: int, batch: dict[str, torch.Tensor]) -> None:
        self.optimize(lambda: self.loss(self.model, batch))


def to_cpu(outputs: Named, prefix: str = "") -> dict[str, torch.Tensor]:
    """Named outputs on the CPU, floats as float32 (what the numerics compare), except
    float64 ones (the fp64 reference's), which stay float64."""
    return {f"{prefix}{k}": _host(v) for k, v in outputs.items()}


def _host(v: torch.Tensor) -> torch.Tensor:
    keep = not v.is_floating_point() or v.dtype == torch.float64
    return (v if keep else v.float()).detach().cpu()


class NamedInferRunner(StepRunner):
    """Forward passes without gradients over a fixed batch order, named in and out.

    ``inputs`` holds ``[n_batches, batch, ...]`` tensors by name; step ``i`` passes batch
    ``i`` of each (a view) to ``forward(model, batch)``, which returns named outputs.
    The numerics compare the first batch's outputs at step 0 (``NAME``) and once more
    after the run (``final_NAME``): a fault that starts after the first step shows there.
    """

    steps_change_outputs: ClassVar[bool] = False  # inference leaves the model as it was

    def __init__(
        self,
        model: nn.Module,
        inputs: Named,
        ctx: RunContext,
        *,
        forward: Callable[[nn.Module, dict[str, torch.Tensor]], Named],
    ) -> None:
        self.model = model.eval()
        self.inputs = dict(inputs)
        self.ctx = ctx
        self.forward = forward
        self.first: Named | None = None

    def batch(self, i: int) -> dict[str, torch.Tensor]:
        return {k: batches(v, i) for k, v in self.inputs.items()}

    def step(self, i: int) -> None:
        self.step_batch(i, self.batch(i))

    def step_batch(self, i: int, batch: dict[str, torch.Tensor]) -> None:
        with torch.inference_mode(), self.ctx.autocast():
            out = self.forward(self.model, batch)
        if i == 0:
            self.first = out

    @property
    def eval_batches(self) -> int:
        """The batches ``finish`` forwards again, from the first: enough for
        ``EVAL_ROWS`` rows where the data holds them (a top-1 gate needs hundreds of
        decisive rows, a batch may hold a few)."""
        first = next(iter(self.inputs.values()), None)
        if first is None or first.dim() < 2 or first.shape[1] == 0:
            return 1
        return max(1, min(first.shape[0], math.ceil(EVAL_ROWS / first.shape[1])))

    def finish(self) -> RunNumerics:
        """The first step's outputs, and after the run (``final_*``) the first
        ``eval_batches`` batches' outputs again, row after row."""
        with torch.inference_mode(), self.ctx.autocast():
            runs = [self.forward(self.model, self.batch(i)) for i in range(self.eval_batches)]
        final = _rows_of(runs)
        first = runs[0] if self.first is None else self.first
        return RunNumerics(outputs={**to_cpu(first), **to_cpu(final, prefix=FINAL)})

    def finish_timing(self) -> RunNumerics:
        """The first step's outputs, without the forwards ``finish`` adds."""
        return self.finish() if self.first is None else RunNumerics(outputs=to_cpu(self.first))

    def finish_cost_s(self, step_s: float) -> tuple[float, float]:
        """``finish`` forwards ``eval_batches`` batches, a step's worth each."""
        return self.eval_batches * step_s, 0.0


def _rows_of(runs: Sequence[Named]) -> dict[str, torch.Tensor]:
    """Each output of several batches' forwards, its rows one after another; an output
    without a batch's rows (a scalar, a shape another batch lacks) is the first batch's."""
    out: dict[str, torch.Tensor] = {}
    for name, head in runs[0].items():
        parts = [r.get(name) for r in runs]
        rows = all(p is not None and p.dim() >= 1 and p.shape[1:] == head.shape[1:] for p in parts)
        out[name] = torch.cat([p for p in parts if p is not None]) if rows else head
    return out


class InferRunner(NamedInferRunner):
    """The one-tensor case: ``forward(model, batch)`` returns the ``logits``."""

    def __init__(
        self,
        model: nn.Module,
        inputs: torch.Tensor,
        ctx: RunContext,
        *,
        forward: Callable[[nn.Module, torch.Tensor], torch.Tensor],
    ) -> None:
        super().__init__(
            model,
            {"input": inputs},
            ctx,
            forward=lambda m, batch: {"logits": forward(m, batch["input"])},
        )


#: what each generation loop times, for the verdict and the report
LOOPS: dict[GenerateLoopName, str] = {
    "parity": "parity's own greedy loop: a forward per token with the model's key/value "
    "cache; each token stamped after a synchronize",
    "hf": "the model's own generate() (transformers, greedy, fixed length); each token "
    "stamped after a synchronize by a logits processor, once its logits are ready",
}


class GenerateLoop(StepRunner):
    """Greedy decoding of ``new_tokens`` tokens per prompt batch; subclasses implement
    ``generate`` and pick each next token with :meth:`pick`. Each step keeps its per-token
    time stamps (TTFT, TPOT, ITL) and the first batch's tokens and prefill logits for the
    numerics; ``loop`` names what a step times (``LOOPS``). After the run, ``finish``
    decodes the first batch once more (``final_*``) while recording each position's top-2
    logits margin: where two sides' tokens first differ, a small margin marks a near-tie
    flip, not a fault."""

    loop: GenerateLoopName = "parity"
    #: ``finish`` decodes every prompt batch again, the first included, from the model the
    #: steps leave unchanged
    steps_change_outputs: ClassVar[bool] = False

    def __init__(
        self, model: nn.Module, prompts: torch.Tensor, ctx: RunContext, new_tokens: int
    ) -> None:
        self.model = model.eval()
        self.prompts = prompts
        self.ctx = ctx
        self.new_tokens = new_tokens
        self.first: tuple[torch.Tensor, torch.Tensor] | None = None
        self.stamps: list[list[int]] = []
        #: the margins of each picked token, while recording (never in a timed step)
        self.recording: list[torch.Tensor] | None = None

    def generate(
        self, prompt: torch.Tensor, stamps: list[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, prefill logits); with ``stamps``, each token is synchronised and
        time-stamped (ns since the start), as a streaming server hands each token out."""
        raise NotImplementedError

    def pick(self, logits: torch.Tensor) -> torch.Tensor:
        """The next tokens (greedy); while recording, their top-2 margins as well."""
        if self.recording is not None:
            if logits.shape[-1] > 1:
                top2 = logits.detach().double().topk(2, dim=-1).values
                self.recording.append(top2[..., 0] - top2[..., 1])
            else:
                self.recording.append(torch.zeros(logits.shape[:-1], dtype=torch.float64))
        return logits.argmax(-1)

    def step(self, i: int) -> None:
        stamps: list[int] = []
        result = self.generate(batches(self.prompts, i), stamps)
        self.stamps.append(stamps)
        if i == 0:
            self.first = result

    def token_times_ns(self) -> list[list[int]] | None:
        return self.stamps

    def score(self, sequence: torch.Tensor) -> torch.Tensor | None:
        """The logits at every position of ``sequence`` in one forward pass (teacher
        forcing); None where the model has no such pass (an encoder-decoder)."""
        return None

    def position_logits(
        self, sequence: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        if sequence is None:
            prompt = batches(self.prompts, 0)
            tokens, _, _ = self.replay(0)
            sequence = torch.cat([prompt, tokens[:, :-1].to(prompt.device)], dim=1)
        with torch.inference_mode(), self.ctx.autocast():
            logits = self.score(sequence.to(self.ctx.device))
        return None if logits is None else (sequence, logits.detach().double().cpu())

    @property
    def prompt_batches(self) -> int:
        return int(self.prompts.shape[0])

    @property
    def prompt_length(self) -> int:
        return int(self.prompts.shape[-1])

    def replay(self, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Batch ``i`` decoded once more while recording: (tokens, prefill logits, each
        generated position's top-2 margin)."""
        self.recording = []
        try:
            tokens, logits = self.generate(batches(self.prompts, i))
            return tokens, logits, torch.stack(self.recording, dim=1)
        finally:
            self.recording = None

    def every_prompt(
        self, first: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """Every prompt's tokens and margins, and, teacher-forced on the prompt and its own
        tokens, the arg-max, top-2 margin and a sketch of the logits (for their cosine
        with the baseline's, ``parity.sketch``) at every position (``every_*``). Where the
        baseline's tokens were handed over (``ctx.forced``, one row per prompt), the arg-max
        and sketch teacher-forced on those as well (``forced``, ``forced_sketch``)."""
        runs = [first] + [self.replay(i) for i in range(1, self.prompts.shape[0])]
        out: dict[str, list[torch.Tensor]] = {}
        forced, row = self._forced(runs), 0
        for i, (tokens, _, margins) in enumerate(runs):
            prompt = batches(self.prompts, i)
            scored = self._scored(prompt, tokens)
            if scored is None:
                return {}
            top1, m1, sketched = scored
            parts = {"tokens": tokens.cpu(), "margins": margins.cpu(), "top1": top1, "m1": m1}
            parts["sketch"] = sketched
            if forced is not None:
                theirs = self._scored(prompt, forced[row : row + tokens.shape[0]])
                assert theirs is not None  # the model scored its own tokens above
                parts["forced"], _, parts["forced_sketch"] = theirs
            row += tokens.shape[0]
            for name, tensor in parts.items():
                out.setdefault(name, []).append(tensor)
        return {k: torch.cat(v) for k, v in out.items()}

    def _forced(self, runs: Sequence[tuple[torch.Tensor, ...]]) -> torch.Tensor | None:
        """The baseline's tokens handed over, where they are one row per prompt this side
        decoded and as many tokens (else None: nothing to score them against)."""
        forced = self.ctx.forced
        rows = sum(tokens.shape[0] for tokens, *_ in runs)
        if forced is None or forced.dim() != 2 or runs[0][0].dim() != 2:
            return None
        return forced if tuple(forced.shape) == (rows, runs[0][0].shape[1]) else None

    def _scored(
        self, prompt: torch.Tensor, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """Teacher-forced on ``prompt`` and ``tokens``: each position's arg-max, top-2
        margin and logits sketch (None where the model has no such pass)."""
        sequence = torch.cat([prompt, tokens[:, :-1].to(prompt.device)], dim=1)
        with torch.inference_mode(), self.ctx.autocast():
            logits = self.score(sequence)
        if logits is None:
            return None
        top2 = logits.detach().double().topk(2, dim=-1)
        margin = (top2.values[..., 0] - top2.values[..., 1]).cpu()
        return top2.indices[..., 0].cpu(), margin, sketch(logits)

    def finish_cost_s(self, step_s: float) -> tuple[float, float]:
        """``finish`` decodes every prompt batch once more while recording each token's
        margin and scores each teacher-forced (one forward), both timed here on the first
        batch, and scores each once more on the baseline's tokens where they are handed
        over. ``step_s`` is not used: recording costs more than a step on a small model."""
        t = time.perf_counter()
        tokens, _, _ = self.replay(0)
        replay_s = time.perf_counter() - t
        t = time.perf_counter()
        scored = self._scored(batches(self.prompts, 0), tokens)
        score_s = time.perf_counter() - t if scored is not None else 0.0
        n = self.prompts.shape[0]
        return n * (replay_s + score_s), n * score_s

    def finish_timing(self) -> RunNumerics:
        """The first step's tokens and prefill logits, without decoding any prompt again
        (``finish`` decodes each once more and scores it: as long as the steps again)."""
        if self.first is None:
            return self.finish()
        tokens, logits = self.first
        return RunNumerics(outputs=to_cpu({"prefill_logits": logits, "tokens": tokens}))

    def finish(self) -> RunNumerics:
        final_tokens, final_logits, margins = self.replay(0)
        first = self.first or (final_tokens.clone(), final_logits.clone())
        outputs = {
            "prefill_logits": first[1],
            "tokens": first[0],
            f"{FINAL}prefill_logits": final_logits,
            f"{FINAL}tokens": final_tokens,
        }
        recorded = {"tokens": margins, f"{FINAL}tokens": margins.clone()}
        every = self.every_prompt((final_tokens, final_logits, margins))
        if every:
            outputs |= {EVERY_TOKENS: every["tokens"], EVERY_TOP1: every["top1"]}
            recorded |= {
                EVERY_TOKENS: every["margins"],
                EVERY_TOP1: every["m1"],
                EVERY_SKETCH: every["sketch"],
            }
            if "forced" in every:  # the target's scores on the baseline's tokens
                recorded |= {
                    EVERY_FORCED: every["forced"],
                    EVERY_FORCED_SKETCH: every["forced_sketch"],
                }
        return RunNumerics(outputs=to_cpu(outputs), margins=to_cpu(recorded))
