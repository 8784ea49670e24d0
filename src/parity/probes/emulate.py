"""Precision profiles: preview a target's matmul precision on any device.

``+emulate=matmul-bf16`` (``-fp16``, ``-tf32``) rounds the floating-point inputs of
matmul, linear, bmm, baddbmm/addmm and convolution to that format before the op runs in
the side's own precision. This emulates *input rounding only*: the device's accumulation
order, accumulator width and fused kernels are not emulated, so the figures are a
preview of the rounding effect, not of a particular chip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


def _round_tf32(x: torch.Tensor) -> torch.Tensor:
    """Round float32 to TF32 (10 mantissa bits), round-to-nearest-even."""
    bits = x.float().contiguous().view(torch.int32)
    lsb = (bits >> 13) & 1
    rounded = (bits + 0x0FFF + lsb) & ~0x1FFF
    finite = torch.isfinite(x.float())
    out = torch.where(finite, rounded.view(torch.float32), x.float()).to(x.dtype)
    # straight-through: forward uses the rounded value, gradients pass unchanged
    return torch.where(finite, x + (out - x).detach(), x)


def _cast_through(dtype: torch.dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    def rounder(x: torch.Tensor) -> torch.Tensor:
        return x.to(dtype).to(x.dtype)

    return rounder


ROUNDERS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "matmul-bf16": _cast_through(torch.bfloat16),
    "matmul-fp16": _cast_through(torch.float16),
    "matmul-tf32": _round_tf32,
}

TARGETS: frozenset[Any] = frozenset(
    {
        torch.matmul,
        torch.mm,
        torch.bmm,
        torch.addmm,
        torch.baddbmm,
        torch.einsum,
        F.linear,
        F.conv1d,
        F.conv2d,
        F.conv3d,
        torch.Tensor.__matmul__,
        torch.Tensor.matmul,
        torch.Tensor.mm,
        torch.Tensor.bmm,
    }
)


_ROUND_SLOTS: dict[Any, range] = {
    torch.addmm: range(1, 3),
    torch.baddbmm: range(1, 3),
    torch.einsum: range(1, 64),
}
_ROUND_KWARGS = frozenset({"input", "weight", "other", "mat1", "mat2", "batch1", "batch2"})


class EmulateMode(TorchFunctionMode):
    """Round matmul-like inputs through a narrower format."""

    def __init__(self, profile: str) -> None:
        super().__init__()
        self.profile = profile
        self.round = ROUNDERS[profile]
        self.calls = 0

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func in TARGETS:
            self.calls += 1
            # inputs and weights, not the bias: devices add the bias at full width
            slots = _ROUND_SLOTS.get(func, range(2))
            args = tuple(
                self.round(a) if i in slots and _is_float(a) else a for i, a in enumerate(args)
            )
            kwargs = {
                k: self.round(v) if k in _ROUND_KWARGS and _is_float(v) else v
                for k, v in kwargs.items()
            }
        return func(*args, **kwargs)


def _is_float(x: object) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()
