"""The cosine similarity of long rows (an LM's logits over its vocabulary) from short
sketches, so that a side can record every position's logits in a few hundred numbers.

Each row is scaled to unit length, then hashed into ``DIMS`` buckets with a random sign
per column (a CountSketch; buckets and signs are drawn from a fixed seed and the row's
length, so every side draws the same). For unit rows ``u`` and ``v``,
``|u - v|^2 = 2 (1 - cos)``, and the sketch ``S`` keeps ``E |S(u - v)|^2 = |u - v|^2``
with a relative standard deviation of at most ``sqrt(2 / DIMS)`` (6.3% at 512), so
``1 - cos`` is read to within that relative error: 0.9999 and 0.99 stay far apart. A row
no longer than ``DIMS`` is kept whole, and its cosine is exact.

A side sketches with torch (:func:`sketch`, in its worker); the parent reads the
sketches back as numpy arrays (:func:`cosine`), without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from parity.arrays import Array, f64

if TYPE_CHECKING:
    import torch

#: buckets per row
DIMS = 512
#: the buckets' and signs' seed (plus the row length)
SEED = 7_340_033


def sketch(rows: torch.Tensor, dims: int = DIMS) -> torch.Tensor:
    """``rows`` (``..., n``) as unit rows sketched to ``..., min(n, dims)`` (float32, on
    the CPU). A zero row stays zero; a row with a NaN or an Inf sketches to NaN."""
    import torch

    x = rows.detach().to("cpu", torch.float64)
    norm = x.norm(dim=-1, keepdim=True)
    unit = torch.where(norm > 0, x / norm, x)
    n = x.shape[-1]
    if n <= dims:
        return unit.float()
    g = torch.Generator().manual_seed(SEED + n)
    bucket = torch.randint(0, dims, (n,), generator=g)
    sign = torch.randint(0, 2, (n,), generator=g).double() * 2 - 1
    out = torch.zeros(*x.shape[:-1], dims, dtype=torch.float64)
    out.index_add_(-1, bucket, unit * sign)
    return out.float()


def cosine(a: Array, b: Array) -> Array:
    """Per row, the cosine similarity of the two rows whose sketches are ``a`` and ``b``:
    ``1 - |a - b|^2 / 2``, within [-1, 1] (NaN where a sketch is)."""
    gap = np.square(f64(a) - f64(b)).sum(-1)
    return np.asarray(np.clip(1 - gap / 2, -1.0, 1.0))
