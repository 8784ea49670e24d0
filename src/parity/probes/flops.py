"""Model FLOPs per step, counted once per side, by the first method that works.

``torch.utils.flop_counter.FlopCounterMode`` counts the FLOPs of matmuls, convolutions
and attention from their shapes, forward and backward. Element-wise work is not counted
(the usual convention for MFU). The methods, in order:

1. ``meta``: one step on meta tensors: nothing runs, nothing is allocated;
2. ``cpu``: one step of the model built on the CPU, where meta tensors are refused
   (``from_pretrained`` under the meta device, a mask computed with ``.item()``), when
   the step is small enough to run there (about ``CPU_BUDGET`` FLOPs, by the estimate);
3. ``estimate``: 2 (inference) or 6 (training) x parameters x tokens per step, from the
   parameter count (attention's quadratic term left out).

The count records the method that gave it and why each earlier one failed
(``Flops.method_name``, ``Flops.tried``); when none works, ``per_step`` is None and
``error`` says why, so the verdict shows a reason instead of a missing row.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace

import torch
from torch.utils.flop_counter import FlopCounterMode

from parity.devices.specs import Key, peak_flops
from parity.model.metrics import FlopAttempt, FlopMethod, Flops, Peak
from parity.model.spec import SideSpec
from parity.safety.redact import redact
from parity.workloads.base import RunContext, Workload, seeded

METHODS: dict[FlopMethod, str] = {
    "meta": "torch.utils.flop_counter on meta tensors",
    "cpu": "torch.utils.flop_counter on one step of the model on the CPU",
    "estimate": "estimate: 2 (inference) or 6 (training) x parameters x tokens",
}
#: above this many FLOPs (by the estimate) one step on the CPU takes too long
CPU_BUDGET = 1e12
Tensors = dict[str, torch.Tensor]


def _reason(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {redact(str(exc))}".split())
    return text[:300]


def _on_meta(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(t, device="meta")


def _on_cpu(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu()


def _step_flops(
    workload: Workload,
    data: Tensors,
    device: torch.device,
    move: Callable[[torch.Tensor], torch.Tensor],
) -> tuple[int, int]:
    """FLOPs of ``workload``'s second step (the first may differ) on ``device``, with the
    data moved there by ``move``: all of them, and those in convolutions."""
    ctx = RunContext(device=device, side=SideSpec(device="cpu"), autocast_type="cpu")
    with warnings.catch_warnings(), seeded(workload.seed):
        warnings.simplefilter("ignore")
        with device:
            model = workload.build_model()
        runner = workload.make_runner(model, {k: move(v) for k, v in data.items()}, ctx)
        counter = FlopCounterMode(display=False)
        with counter:
            runner.step(1)
    by_op = counter.get_flop_counts().get("Global", {})
    conv = sum(n for op, n in by_op.items() if "convolution" in str(op))
    return int(counter.get_total_flops()), int(conv)


def estimate(workload: Workload, parameters: int) -> int:
    """2 or 6 x parameters x tokens (or samples) of one step."""
    items = workload.items_per_step()
    units = items["tokens"] or items["samples"]
    if workload.kind == "generate" and workload.seq_len:
        units += workload.batch_size * workload.seq_len  # the prompts' prefill
    return (6 if workload.kind == "train" else 2) * parameters * units


def _counted(
    method: FlopMethod, per_step: float, tried: list[FlopAttempt], conv: float | None = None
) -> Flops:
    return Flops(
        per_step=per_step,
        method=METHODS[method],
        method_name=method,
        tried=tuple(tried) or None,
        conv_per_step=conv,
    )


def count_flops(workload: Workload, data: Tensors) -> Flops:
    """FLOPs of one step of ``workload`` (see the module's docstring for the methods)."""
    tried: list[FlopAttempt] = []

    def attempt(method: FlopMethod, fn: Callable[[], tuple[int, int]]) -> Flops | None:
        try:
            total, conv = fn()
            return _counted(method, float(total), tried, float(conv))
        except Exception as exc:  # any op without a meta kernel, any user-workload quirk
            tried.append(FlopAttempt(method=method, error=_reason(exc)))
            return None

    meta, cpu = torch.device("meta"), torch.device("cpu")
    found = attempt("meta", lambda: _step_flops(workload, data, meta, _on_meta))
    if found is not None:
        return found
    guess: int | None = None
    try:
        guess = estimate(workload, workload.parameter_count())
    except Exception as exc:  # a model that cannot be built on meta: no size known
        tried.append(FlopAttempt(method="estimate", error=_reason(exc)))
    if guess is None or guess <= CPU_BUDGET:
        found = attempt("cpu", lambda: _step_flops(workload, data, cpu, _on_cpu))
        if found is not None:
            return found
    else:
        skipped = f"skipped: about {guess:.1e} FLOPs is too much for one CPU step"
        tried.append(FlopAttempt(method="cpu", error=skipped))
    if guess is not None:
        return _counted("estimate", float(guess), tried)
    error = "; ".join(f"{t.method}: {t.error}" for t in tried) or "not counted"
    return Flops(per_step=None, method="not counted", error=error, tried=tuple(tried))


def peak(
    device: Key, matmul: str, conv: str | None = None, flops: Flops | None = None
) -> Peak | None:
    """The peak FLOP/s of a device (by its key: exact names) for the step's formats, from
    ``specs.toml``: the matmuls' format, unless the step's convolutions run in another
    (cuDNN's TF32 under an fp32 side on CUDA). Then it is the peak weighted by their
    FLOPs, the rate at which the step would run were every op at its format's peak:
    ``F / (F_conv / P_conv + F_rest / P_matmul)``, so that MFU stays at most 1."""
    base = peak_flops(device, matmul)
    share = None
    if flops is not None and flops.per_step and flops.conv_per_step:
        share = flops.conv_per_step / flops.per_step
    if base is None or conv is None or conv == matmul or not share:
        return base
    other = peak_flops(device, conv)
    if other is None:
        return None  # a format whose peak is unknown: no MFU rather than a wrong one
    weighted = 1.0 / (share / other.flops + (1.0 - share) / base.flops)
    how = f"weighted by the step's FLOPs: {share:.0%} convolutions at {conv}, the rest at {matmul}"
    return replace(
        base,
        dtype=f"{conv} conv + {matmul} matmul",
        flops=weighted,
        source=f"{base.source}; {how}" if base.source else how,
    )


def mfu(flops: Flops, median_step_s: float | None, peak: Peak | None, *, devices: int = 1) -> Flops:
    """Achieved FLOP/s, and MFU where the device's peak for the dtype is known.

    ``devices``: the step's FLOPs are spread over this many framework devices (a torchrun
    side's ranks), so MFU is per device."""
    if not flops.per_step or not median_step_s:
        return replace(flops, achieved_flops=None, mfu=None, peak=peak)
    achieved = flops.per_step / median_step_s
    share = achieved / peak.flops / devices if peak is not None else None
    return replace(flops, achieved_flops=achieved, mfu=share, peak=peak)
