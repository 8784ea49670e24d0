"""Error measures the numerics gates share: RMSE, relative error, distributions.

A relative error is ``rmse(x - ref) / rms(ref)``; ``math.inf`` stands for a value that is
not finite (NaN or Inf in ``x``), which JSON cannot hold: :func:`finite_or_none` turns it
into the None a verdict stores.
"""

from __future__ import annotations

import math

import torch

from parity.model.quality import ErrorDistribution

TINY = torch.finfo(torch.float64).tiny


def rmse(x: torch.Tensor) -> float:
    return float(x.pow(2).mean().sqrt()) if x.numel() else 0.0


def relative(x: torch.Tensor, ref: torch.Tensor) -> float:
    """The relative RMS error of ``x`` against ``ref`` (inf: ``x`` is not finite)."""
    x, ref = x.double().flatten(), ref.double().flatten()
    if x.numel() != ref.numel():
        return math.inf
    if not bool(torch.isfinite(x).all()):
        return math.inf
    rms = rmse(ref)
    value = rmse(x - ref)
    return value / rms if rms > 0 else (0.0 if value == 0 else math.inf)


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def distribution(x: torch.Tensor) -> ErrorDistribution:
    if x.numel() == 0:
        return ErrorDistribution(max=0.0, mean=0.0, p99=0.0)
    return ErrorDistribution(
        max=float(x.max()),
        mean=float(x.mean()),
        p99=float(torch.quantile(x, 0.99)) if x.numel() > 1 else float(x.max()),
    )


def min_rtol_at(err: torch.Tensor, ref: torch.Tensor, atol: float) -> float:
    """The smallest rtol that passes with ``atol`` fixed."""
    if err.numel() == 0:
        return 0.0
    return float(((err - atol).clamp_min(0) / ref.abs().clamp_min(TINY)).max())


def all_finite(x: torch.Tensor) -> bool:
    return not x.is_floating_point() or bool(torch.isfinite(x).all())
