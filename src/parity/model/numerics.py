"""``numerics.json`` (loss curve and output summaries) and ``capture.json`` (the numerics
probe: outputs, gradients after the first backward, every module's input and output).

The tensors themselves are in the bundle's ``numerics.safetensors`` and
``capture.safetensors``; these documents summarise them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from parity.model.codec import omit_none

#: what a named output holds, so the verdict can pick the right check for it: ``logits``
#: (scores over classes or a vocabulary), ``embeddings`` (one vector per sample),
#: ``tokens`` (integer ids), ``hidden`` (any other activation), ``loss``
OutputKind = Literal["logits", "embeddings", "tokens", "hidden", "loss"]
OUTPUT_KINDS: tuple[OutputKind, ...] = get_args(OutputKind)
#: the kinds an output's name says (``logits``, ``eval_logits``, ``text_embeddings``)
NAMED_KINDS: tuple[OutputKind, ...] = ("logits", "embeddings", "loss")

#: a generate workload's record of every prompt, after the run: outputs ``every_tokens``
#: (each prompt's generated tokens) and ``every_top1`` (the arg-max at every position,
#: teacher-forced on the prompt and the side's own tokens); beside them, with the margins,
#: ``every_sketch`` (each position's logits sketched, ``parity.sketch``), and on a target
#: handed the baseline's tokens, ``every_forced`` and ``every_forced_sketch`` (the arg-max
#: and sketch teacher-forced on the baseline's tokens instead)
EVERY_TOKENS, EVERY_TOP1, EVERY_SKETCH = "every_tokens", "every_top1", "every_sketch"
EVERY_FORCED, EVERY_FORCED_SKETCH = "every_forced", "every_forced_sketch"
#: the prefix of an output recomputed after the run (an inference runner's: the first
#: batches again)
FINAL = "final_"


def output_kind(name: str, *, floating: bool) -> OutputKind:
    """The kind of an output named by convention: ``*logits``, ``*embeddings``, ``loss``,
    and integer tensors (tokens); anything else is a hidden state."""
    if not floating:
        return "tokens"
    for kind in NAMED_KINDS:
        if name == kind or name.endswith(f"_{kind}"):
            return kind
    return "hidden"


@dataclass(frozen=True, kw_only=True, slots=True)
class OutputSummary:
    """A tensor in ``numerics.safetensors``: shape, dtype and, where finite, its moments."""

    shape: tuple[int, ...]
    dtype: str
    finite: bool
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None
    #: what the output holds (absent in bundles written before outputs had kinds)
    kind: OutputKind | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckpointSaved:
    step: int
    to: str


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckpointRestored:
    step: int
    saved_by: str
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckpointEvents:
    """``train_ckpt`` mode: where the run started and what it saved or restored."""

    start: int
    restored: CheckpointRestored | None = None
    saved: CheckpointSaved | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class NonFiniteOrigin:
    """Where a run's first NaN or Inf appeared: its steps replayed eagerly on fresh frozen
    weights, every module's output checked, until one is not finite (``found`` false: the
    replay did not reproduce it)."""

    found: bool
    #: the step it appeared in (None: in ``finish()``, after the steps)
    step: int | None = None
    #: the first module, in execution order, whose output was not finite
    module: str | None = None
    #: ``forward``: a module's output; ``update``: every forward was finite and a
    #: parameter was not after the step (the loss, the backward or the optimizer)
    where: Literal["forward", "update"] | None = None
    parameter: str | None = omit_none()
    detail: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class RunOutputs:
    """``numerics.json``: what a run produced for the numerics comparison."""

    #: one loss per step; null where it was not finite
    losses: tuple[float | None, ...] = ()
    outputs: dict[str, OutputSummary] = field(default_factory=dict)
    checkpoint: CheckpointEvents | None = omit_none()
    #: generated tokens' top-2 logits margins: output name -> its tensor in
    #: ``numerics.safetensors`` (``margin.NAME``), one value per generated position
    margins: tuple[str, ...] = ()
    #: a loss or an output was not finite: where it first appeared
    nonfinite: NonFiniteOrigin | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class TensorSummary:
    """Summary statistics of a captured tensor (computed in float32 on the device)."""

    shape: tuple[int, ...]
    dtype: str
    numel: int
    mean: float | None = None
    std: float | None = None
    absmax: float | None = None
    min: float | None = None
    max: float | None = None
    finite_fraction: float | None = None
    #: an output larger than the sample size: the stored values are a sample
    sampled: bool | None = omit_none()
    #: a probe output: what it holds
    kind: OutputKind | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerRecord:
    """One module's first call in execution order: its output and first tensor input."""

    name: str
    type: str
    leaf: bool
    output: TensorSummary
    input: TensorSummary | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class AfterRun:
    """The probe's forward pass once more after the timed steps, on the run's own model
    (its modules, with whatever state the run left in them) with the weights it started
    the run from restored: what the run's arithmetic does by its end, on the same weights
    as the fp64 reference's probe. Tensors: ``after_run.*`` in ``capture.safetensors``;
    the layers' summaries are of those samples (``sampled``), not of whole tensors."""

    outputs: dict[str, TensorSummary] = field(default_factory=dict)
    layers: tuple[LayerRecord, ...] = ()
    error: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Capture:
    """``capture.json``: the numerics probe's summaries (or why there is none)."""

    outputs: dict[str, TensorSummary] = field(default_factory=dict)
    gradients: dict[str, TensorSummary] = field(default_factory=dict)
    layers: tuple[LayerRecord, ...] = ()
    #: with +compile the per-module pass ran eagerly on a fresh copy
    layers_eager: bool = False
    #: the workload defines no probe, or the probe failed
    error: str | None = omit_none()
    #: the same pass after the run (measured sides; absent under torchrun)
    after_run: AfterRun | None = omit_none()

    @property
    def available(self) -> bool:
        return self.error is None
