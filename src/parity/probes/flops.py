"""Model FLOPs per step, counted once on the meta device (no memory, no compute).

``torch.utils.flop_counter.FlopCounterMode`` counts the FLOPs of matmuls, convolutions
and attention from their shapes, forward and backward; a step on meta tensors gives the
count without running anything. Element-wise work is not counted (the usual convention
for MFU). Where a workload cannot run on meta tensors the count is None and the report
says so.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import torch
from torch.utils.flop_counter import FlopCounterMode

from parity.devices.specs import peak_flops
from parity.model.metrics import Flops, Peak
from parity.spec import SideSpec
from parity.workloads.base import RunContext, Workload

METHOD = "torch.utils.flop_counter on meta tensors"


def count_flops(workload: Workload, data: dict[str, torch.Tensor]) -> Flops:
    """FLOPs of one step of ``workload`` (its second step: the first may differ)."""
    try:
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = workload.build_model()
            meta_data = {k: torch.empty_like(v, device="meta") for k, v in data.items()}
            ctx = RunContext(
                device=torch.device("meta"), side=SideSpec(device="cpu"), autocast_type="cpu"
            )
            runner = workload.make_runner(model, meta_data, ctx)
            counter = FlopCounterMode(display=False)
            with counter:
                runner.step(1)
        total = int(counter.get_total_flops())
    except Exception as exc:  # any op without a meta kernel, any user-workload quirk
        return Flops(per_step=None, method=METHOD, error=f"{type(exc).__name__}: {exc}"[:300])
    return Flops(per_step=float(total), method=METHOD)


def peak(device_name: str, dtype: str) -> Peak | None:
    """The peak FLOP/s of a device (by its exact name) for a dtype, from ``specs.toml``."""
    return peak_flops(device_name, dtype)


def mfu(flops: Flops, median_step_s: float | None, peak: Peak | None, *, devices: int = 1) -> Flops:
    """Achieved FLOP/s, and MFU where the device's peak for the dtype is known.

    ``devices``: the step's FLOPs are spread over this many framework devices (a torchrun
    side's ranks), so MFU is per device."""
    if not flops.per_step or not median_step_s:
        return replace(flops, achieved_flops=None, mfu=None, peak=peak)
    achieved = flops.per_step / median_step_s
    share = achieved / peak.flops / devices if peak is not None else None
    return replace(flops, achieved_flops=achieved, mfu=share, peak=peak)
