"""The numerics probe: outputs, gradients and every module's output on the first batch.

Each side runs it once (repeat r00), on freshly loaded frozen weights, after its timed
steps, so it never touches timing. The fp64 reference runs the same probe on the CPU
with the model and float data in float64, and the expected-error run on the CPU at the
target's precision. After the run, :func:`after_run` repeats the probe's forward pass on
the run's own model (the weights it started from restored): a fault that appears only
after some steps shows there, on the same weights as the reference's probe. Everything is
bounded in size:

- outputs (logits, loss): whole when small, else a deterministic sample of 65,536 values;
- gradients after the first backward: a summary and a 256-value sample per parameter;
- per module, in execution order: a summary and a 256-value sample of its first tensor
  input and of its output (forward hooks, first call only).

Samples are taken at the same indices on every side (a generator seeded by the tensor's
name), so they can be compared value by value across machines. Summaries are computed on
the device in float32 (some devices downcast 64-bit) and copied back once.

With ``+compile`` the outputs and gradients come from the compiled model, but the
per-module pass runs eagerly on another fresh copy: hooks inside a compiled graph would
change what is compiled.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from parity.model.numerics import AfterRun, Capture, LayerRecord, TensorSummary
from parity.workloads.base import RunContext, Workload, output_kind

LAYER_SAMPLE = 256
OUTPUT_SAMPLE = 65_536


def sample_indices(name: str, numel: int, k: int) -> torch.Tensor:
    """``k`` indices into a flattened tensor, the same for a name on every machine."""
    if numel <= k:
        return torch.arange(numel)
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    return torch.randint(0, numel, (k,), generator=g).sort().values


def take(name: str, t: torch.Tensor, k: int) -> torch.Tensor:
    flat = t.detach().reshape(-1)
    idx = sample_indices(name, flat.numel(), k).to(flat.device)
    keep = torch.float64 if flat.dtype == torch.float64 else torch.float32
    return flat.index_select(0, idx).to(keep).cpu()


def summarize(t: torch.Tensor, *, sampled: bool | None = None) -> TensorSummary:
    x = t.detach().float()
    dtype, shape = str(t.dtype).removeprefix("torch."), tuple(t.shape)
    if x.numel() == 0:
        return TensorSummary(shape=shape, dtype=dtype, numel=0, sampled=sampled)
    finite = torch.isfinite(x)
    xf = torch.where(finite, x, torch.zeros_like(x))
    stats = torch.stack(
        [
            xf.mean(),
            xf.std() if x.numel() > 1 else xf.mean() * 0,
            xf.abs().max(),
            xf.min(),
            xf.max(),
            finite.float().mean(),
        ]
    ).cpu()
    mean, std, absmax, lo, hi, frac = (_finite(float(v)) for v in stats)
    return TensorSummary(
        shape=shape,
        dtype=dtype,
        numel=x.numel(),
        mean=mean,
        std=std,
        absmax=absmax,
        min=lo,
        max=hi,
        finite_fraction=frac,
        sampled=sampled,
    )


def _finite(value: float) -> float | None:
    """A statistic JSON can hold (a float32 overflow of huge finite values is none)."""
    return value if value == value and abs(value) != float("inf") else None


def first_tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = first_tensor(item)
            if found is not None:
                return found
    if isinstance(value, dict):
        for item in value.values():
            found = first_tensor(item)
            if found is not None:
                return found
    return None


class LayerRecorder:
    """Forward hooks on every module; records the first call of each, in order.

    ``whole``: each summary over the whole tensor (on the device: a few kernels per
    module); else over its sample alone (on the CPU), for a pass whose summaries nothing
    reads (the one after the run: localisation compares the samples)."""

    def __init__(self, model: nn.Module, *, whole: bool = True) -> None:
        self.whole = whole
        self.layers: list[LayerRecord] = []
        self.seen: set[str] = set()
        self.tensors: dict[str, torch.Tensor] = {}
        self.model = model
        self.handles = [
            module.register_forward_hook(self._hook(name or "(model)"))
            for name, module in model.named_modules()
        ]

    def _hook(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if name in self.seen:
                return
            out = first_tensor(output)
            if out is None or not out.is_floating_point():
                return
            self.seen.add(name)
            sample = self.tensors[f"layer.out.{name}"] = take(f"out.{name}", out, LAYER_SAMPLE)
            inp = first_tensor(args)
            has_input = inp is not None and inp.is_floating_point()
            sample_in = None
            if inp is not None and has_input:
                sample_in = take(f"in.{name}", inp, LAYER_SAMPLE)
                self.tensors[f"layer.in.{name}"] = sample_in
            record = LayerRecord(
                name=name,
                type=type(module).__name__,
                leaf=next(module.children(), None) is None,
                output=summarize(out) if self.whole else summarize(sample, sampled=True),
                input=None
                if inp is None or sample_in is None
                else (summarize(inp) if self.whole else summarize(sample_in, sampled=True)),
            )
            self.layers.append(record)

        return hook

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def capture(
    workload: Workload,
    fresh_model: Callable[[], nn.Module],
    data: dict[str, torch.Tensor],
    ctx: RunContext,
    *,
    compile_fn: Callable[[nn.Module], nn.Module] | None = None,
    mode: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> tuple[Capture, dict[str, torch.Tensor]]:
    """Run the probe; return its summaries and the sampled tensors to store.

    A workload without a probe raises ``NotImplementedError`` (the caller records why)."""
    outs: dict[str, TensorSummary] = {}
    grads: dict[str, TensorSummary] = {}
    tensors: dict[str, torch.Tensor] = {}
    model = fresh_model()
    recorder = None if compile_fn is not None else LayerRecorder(model)
    run_model = compile_fn(model) if compile_fn is not None else model
    try:
        with mode(), ctx.autocast():
            outputs = workload.probe(run_model, data)
    finally:
        if recorder is not None:
            recorder.close()
    for name, value in outputs.items():
        outs[name] = replace(
            summarize(value, sampled=value.numel() > OUTPUT_SAMPLE), kind=output_kind(name, value)
        )
        tensors[f"output.{name}"] = take(f"output.{name}", value, OUTPUT_SAMPLE)
    loss = outputs.get("loss")
    if workload.kind == "train" and loss is not None and loss.requires_grad:
        with mode():
            loss.backward()  # type: ignore[no-untyped-call]
        for name, p in model.named_parameters():
            if p.grad is not None:
                grads[name] = summarize(p.grad)
                tensors[f"grad.{name}"] = take(f"grad.{name}", p.grad, LAYER_SAMPLE)
    eager = recorder is None
    if recorder is None:  # compiled: the per-module pass runs eagerly on a fresh copy
        recorder = LayerRecorder(fresh_model())
        try:
            with torch.no_grad(), mode(), ctx.autocast():
                workload.probe(recorder.model, data)
        finally:
            recorder.close()
    tensors.update(recorder.tensors)
    capture = Capture(
        outputs=outs, gradients=grads, layers=tuple(recorder.layers), layers_eager=eager
    )
    return capture, tensors


#: the prefix of the after-run pass's tensors in ``capture.safetensors``
AFTER_RUN = "after_run."


def after_run(
    workload: Workload,
    model: nn.Module,
    data: dict[str, torch.Tensor],
    ctx: RunContext,
    *,
    mode: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> tuple[AfterRun, dict[str, torch.Tensor]]:
    """The probe's forward pass on ``model`` (the run's own, its starting weights restored
    by the caller), every module recorded (summaries of the samples); an error is recorded,
    not raised."""
    recorder = LayerRecorder(model, whole=False)
    try:
        with torch.no_grad(), mode(), ctx.autocast():
            outputs = workload.probe(model, data)
    except Exception as exc:  # recorded in the bundle: the side's run itself went well
        return AfterRun(error=f"{type(exc).__name__}: {exc}"), {}
    finally:
        recorder.close()
    tensors = {AFTER_RUN + k: v for k, v in recorder.tensors.items()}
    outs = {}
    for name, value in outputs.items():
        outs[name] = replace(
            summarize(value, sampled=value.numel() > OUTPUT_SAMPLE), kind=output_kind(name, value)
        )
        tensors[f"{AFTER_RUN}output.{name}"] = take(f"output.{name}", value, OUTPUT_SAMPLE)
    return AfterRun(outputs=outs, layers=tuple(recorder.layers)), tensors
