"""What a mode measured, as the bundle's typed documents.

- :class:`Steps`: raw step samples split into the first step, warm-up and steady state
  (``metrics.json``'s phases, summary and throughput);
- :func:`write_outputs`: what ``runner.finish()`` returned, as ``numerics.json`` and
  ``numerics.safetensors``;
- :func:`numerics_probe` and :func:`write_capture`: ``capture.json`` and
  ``capture.safetensors``.

Statistics come from :mod:`parity.stats`: its
``Summary`` and ``SteadyState`` become the model's in :func:`summary_of` and
:func:`steady_of`, the only place that knows both.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import nn

from parity import stats
from parity.bundle import CAPTURE, CAPTURE_TENSORS, MARGIN, OUTPUT_TENSORS, OUTPUTS
from parity.model.manifest import Items
from parity.model.metrics import Memory, Metrics, Phases, SteadyState, Summary, Throughput
from parity.model.numerics import (
    Capture,
    CheckpointEvents,
    NonFiniteOrigin,
    OutputKind,
    OutputSummary,
    RunOutputs,
)
from parity.probes.emulate import EmulateMode
from parity.probes.numerics import capture
from parity.runner.session import NS, SideSession
from parity.safety.redact import redact
from parity.workloads.base import RunContext, RunNumerics, Workload


@dataclass(frozen=True, kw_only=True)
class Steps:
    """Step samples (seconds): step 0 apart, then warm-up until steady, then steady."""

    seconds: tuple[float, ...]
    steady: SteadyState | None
    #: warm-up steps after the first
    warmup: int
    summary: Summary | None
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, samples_ns: list[int]) -> Steps:
        seconds = tuple(s * NS for s in samples_ns)
        rest = list(seconds[1:])
        steady = stats.detect_steady(rest) if rest else None
        start = steady.start if steady else 0
        summary = stats.summarize(rest[start:]) if rest[start:] else None
        return cls(
            seconds=seconds,
            steady=steady,
            warmup=start,
            summary=summary,
            warnings=tuple(summary.warnings()) if summary is not None else (),
        )

    @property
    def median(self) -> float | None:
        return self.summary.median if self.summary is not None else None

    @property
    def steady_from(self) -> int:
        """Samples from this step on are steady (step 0 is always apart)."""
        return 1 + self.warmup

    def phases(
        self, *, startup: tuple[float | None, float], load_s: float | None, **extra: float
    ) -> Phases:
        rest = self.seconds[1:]
        return Phases(
            start_import_s=startup[0],
            worker_import_s=startup[1],
            load_s=load_s,
            first_step_s=self.seconds[0],
            warmup_s=sum(rest[: self.warmup]),
            warmup_steps=self.warmup,
            steady_s=sum(rest[self.warmup :]),
            steady_steps=len(rest) - self.warmup,
            **extra,
        )

    def throughput(self, items: Items | None) -> Throughput:
        median = self.median
        if items is None or median is None or median <= 0:
            return Throughput()
        return Throughput(
            samples_per_s=items.samples / median,
            tokens_per_s=items.tokens / median if items.tokens else None,
        )

    def metrics(self, *, phases: Phases, memory: Memory, items: Items | None) -> Metrics:
        return Metrics(
            phases=phases,
            steady_state=self.steady,
            steady_from_step=self.steady_from,
            step_samples_s=self.seconds,
            summary=self.summary,
            noise_warnings=self.warnings,
            items_per_step=items,
            throughput=self.throughput(items),
            memory=memory,
        )


def finite(x: float | None) -> float | None:
    """A loss JSON can hold: None where it is not finite."""
    return x if x is not None and math.isfinite(x) else None


def output_summary(t: torch.Tensor, kind: OutputKind | None = None) -> OutputSummary:
    f = t.double()
    n = f.numel()
    ok = bool(torch.isfinite(f).all()) if n else True
    return OutputSummary(
        shape=tuple(t.shape),
        dtype=str(t.dtype).removeprefix("torch."),
        finite=ok,
        mean=float(f.mean()) if n and ok else None,
        std=float(f.std()) if n > 1 and ok else None,
        min=float(f.min()) if n and ok else None,
        max=float(f.max()) if n and ok else None,
        kind=kind,
    )


def write_outputs(
    session: SideSession,
    numerics: RunNumerics,
    *,
    losses: Sequence[float | None] | None = None,
    checkpoint: CheckpointEvents | None = None,
    nonfinite: Callable[[], NonFiniteOrigin] | None = None,
) -> None:
    """``numerics.json`` and ``numerics.safetensors`` from what ``finish()`` returned;
    ``nonfinite`` finds where a NaN or Inf first appeared, called only if one did."""
    session.enter("outputs", announce=False)
    tensors = {k: v.detach().cpu().contiguous() for k, v in numerics.outputs.items()}
    curve = numerics.losses if losses is None else losses
    summaries = {name: output_summary(t, numerics.kind(name)) for name, t in tensors.items()}
    bad = any(x is None or not math.isfinite(x) for x in curve)
    bad = bad or not all(s.finite for s in summaries.values())
    origin = None
    if bad and nonfinite is not None:
        session.enter("non-finite replay")
        origin = nonfinite()
    outputs = RunOutputs(
        losses=tuple(finite(x) for x in curve),
        outputs=summaries,
        checkpoint=checkpoint,
        margins=tuple(sorted(numerics.margins)),
        nonfinite=origin,
    )
    margins = {MARGIN + k: v.detach().cpu().contiguous() for k, v in numerics.margins.items()}
    session.write(OUTPUTS, outputs)
    session.save_tensors(OUTPUT_TENSORS, {**tensors, **margins})


def emulation(profile: str | None) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """The context a side's numerics run in: its ``+emulate`` profile, or nothing."""
    return partial(EmulateMode, profile) if profile else contextlib.nullcontext


def numerics_probe(
    workload: Workload,
    fresh_model: Callable[[], nn.Module],
    data: dict[str, torch.Tensor],
    ctx: RunContext,
    *,
    compile_fn: Callable[[nn.Module], nn.Module] | None = None,
    emulate: str | None = None,
) -> tuple[Capture, dict[str, torch.Tensor]]:
    """The numerics probe, or why a workload has none."""
    try:
        return capture(
            workload, fresh_model, data, ctx, compile_fn=compile_fn, mode=emulation(emulate)
        )
    except NotImplementedError as exc:
        return Capture(error=redact(str(exc))), {}


def write_capture(session: SideSession, probe: Capture, tensors: dict[str, torch.Tensor]) -> None:
    session.write(CAPTURE, probe)
    session.save_tensors(CAPTURE_TENSORS, tensors)
