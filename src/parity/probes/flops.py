"""Model FLOPs per step, counted once on the meta device (no memory, no compute).

``torch.utils.flop_counter.FlopCounterMode`` counts the FLOPs of matmuls, convolutions
and attention from their shapes, forward and backward; a step on meta tensors gives the
count without running anything. Element-wise work is not counted (the usual convention
for MFU). Where a workload cannot run on meta tensors the count is None and the report
says so.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from parity.spec import SideSpec
from parity.workloads.base import RunContext, Workload


def count_flops(workload: Workload, data: dict[str, torch.Tensor]) -> dict[str, Any]:
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
        return {
            "per_step": None,
            "method": "torch.utils.flop_counter on meta tensors",
            "error": f"{type(exc).__name__}: {exc}"[:300],
        }
    return {"per_step": total, "method": "torch.utils.flop_counter on meta tensors"}


def mfu(
    flops_per_step: int | None, median_step_s: float | None, peak: dict[str, Any] | None
) -> dict[str, Any]:
    """Achieved FLOP/s, and MFU where the device's peak for the dtype is known.

    The peak is one framework device's (a GPU, a logical NeuronCore); ``peak_unit`` says
    which, so an MFU figure never leaves without the unit it is per."""
    unit = peak.get("unit") if peak else None
    if not flops_per_step or not median_step_s:
        return {"achieved_flops": None, "mfu": None, "peak": peak, "peak_unit": unit}
    achieved = flops_per_step / median_step_s
    return {
        "achieved_flops": achieved,
        "mfu": achieved / peak["flops"] if peak else None,
        "peak": peak,
        "peak_unit": unit,
    }
