"""CUDA's own autocast against the CPU reproduction of its lists, op by op, on a GPU
(``scripts/gpu-check`` runs the tests marked ``cuda``): the same dtypes, and values within
what the two kernels' rounding allows (they are different kernels)."""

from __future__ import annotations

import pytest
import torch

from parity.probes import autocast_policy as ap
from tests.fixtures.autocast_cases import BF16, CASES, inputs, leaves, to_device

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_op_gives_the_dtype_real_cuda_autocast_gives(name: str) -> None:
    run = CASES[name]
    given = inputs()
    torch.manual_seed(0)
    with torch.autocast("cuda", dtype=BF16):
        want = [t.cpu() for t in leaves(run(to_device(given, "cuda")))]
    torch.manual_seed(0)
    with ap.reproduce("cuda"), torch.autocast("cpu", dtype=BF16):
        got = leaves(run(given))
    assert [t.dtype for t in got] == [t.dtype for t in want], name
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.double(), w.double(), rtol=5e-2, atol=5e-2, equal_nan=True)
