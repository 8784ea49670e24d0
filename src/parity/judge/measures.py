"""Error measures the numerics gates share: RMSE, relative error, distributions.

A relative error is ``rmse(x - ref) / rms(ref)``; ``math.inf`` stands for a value that is
not finite (NaN or Inf in ``x``), which JSON cannot hold: :func:`finite_or_none` turns it
into the None a verdict stores. Arrays are numpy's (``parity.arrays``): the judge never
imports torch.
"""

from __future__ import annotations

import math

import numpy as np

from parity.arrays import Array, f64
from parity.model.quality import ErrorDistribution

TINY = float(np.finfo(np.float64).tiny)


def rmse(x: Array) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def relative(x: Array, ref: Array) -> float:
    """The relative RMS error of ``x`` against ``ref`` (inf: ``x`` is not finite)."""
    x, ref = f64(x).ravel(), f64(ref).ravel()
    if x.size != ref.size:
        return math.inf
    if not bool(np.isfinite(x).all()):
        return math.inf
    rms = rmse(ref)
    value = rmse(x - ref)
    return value / rms if rms > 0 else (0.0 if value == 0 else math.inf)


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def distribution(x: Array) -> ErrorDistribution:
    if x.size == 0:
        return ErrorDistribution(max=0.0, mean=0.0, p99=0.0)
    return ErrorDistribution(
        max=float(x.max()),
        mean=float(x.mean()),
        p99=float(np.quantile(x, 0.99)) if x.size > 1 else float(x.max()),
    )


def min_rtol_at(err: Array, ref: Array, atol: float) -> float:
    """The smallest rtol that passes with ``atol`` fixed."""
    if err.size == 0:
        return 0.0
    return float((np.maximum(err - atol, 0.0) / np.maximum(np.abs(ref), TINY)).max())
