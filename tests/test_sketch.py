"""Sketched cosine: exact for short rows, within its stated relative error on ``1 - cos``
for a vocabulary-sized row, blind to scale, NaN where a row is not finite."""

from __future__ import annotations

import math

import numpy as np
import torch

from parity.sketch import DIMS, cosine, sketch


def _exact(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1).numpy()


def _cos(sa: torch.Tensor, sb: torch.Tensor) -> np.ndarray:
    """The parent's reading of two sides' sketches, as it reads them from their bundles."""
    return cosine(sa.numpy(), sb.numpy())


def test_short_rows_are_kept_whole_and_exact() -> None:
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(6, 100, generator=gen)
    b = a + 0.3 * torch.randn(6, 100, generator=gen)
    sa, sb = sketch(a), sketch(b)
    assert sa.shape == (6, 100)
    assert np.allclose(_cos(sa, sb), _exact(a, b), atol=1e-6)


def test_a_vocabulary_row_reads_one_minus_cos_within_the_stated_error() -> None:
    gen = torch.Generator().manual_seed(1)
    vocab = 49_152
    a = 4 * torch.randn(64, vocab, generator=gen)
    # errors of the size a lower precision makes, and some rows far off
    scale = torch.logspace(-3, 0, 64).unsqueeze(-1)
    b = a + scale * torch.randn(64, vocab, generator=gen) * 4
    sa, sb = sketch(a), sketch(b)
    assert sa.shape == (64, DIMS) and sa.dtype == torch.float32
    exact, read = 1 - _exact(a, b), 1 - _cos(sa, sb)
    ratio = read / exact
    sd = math.sqrt(2 / DIMS)
    # each row within 5 standard deviations, and no bias over the 64 rows
    assert float(np.abs(ratio - 1).max()) < 5 * sd, ratio
    assert abs(float(ratio.mean()) - 1) < 3 * sd / math.sqrt(64) + 1e-3


def test_the_sketch_is_blind_to_scale_and_the_same_on_every_side() -> None:
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(3, 5000, generator=gen)
    assert torch.allclose(sketch(a), sketch(7.5 * a), atol=1e-6)
    assert torch.equal(sketch(a), sketch(a.clone()))
    assert np.allclose(_cos(sketch(a), sketch(a)), np.ones(3))
    # opposite rows: 1 - cos = 2, read within its relative error
    opposite = 1 - _cos(sketch(a), sketch(-a))
    assert float(np.abs(opposite / 2 - 1).max()) < 5 * math.sqrt(2 / DIMS)


def test_a_row_that_is_not_finite_sketches_to_nan() -> None:
    a = torch.randn(2, 3000)
    a[1, 7] = float("inf")
    read = _cos(sketch(a), sketch(a))
    assert math.isfinite(float(read[0])) and math.isnan(float(read[1]))
