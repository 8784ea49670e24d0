from __future__ import annotations

import pytest
import torch

from parity.judge.numerics import effective_precision, gate
from parity.spec import parse_side

REF = torch.linspace(-2, 2, 1000, dtype=torch.float64)


def test_rmse_rule_scales_with_the_baseline_error() -> None:
    base = REF + 1e-3
    ok = gate("x", REF + 1.9e-3, base, REF, k=2, tol=1e-4)
    assert ok["passed"] and ok["rule"] == "rmse"
    assert ok["bound"] == pytest.approx(2e-3 + 1e-5)
    bad = gate("x", REF + 2.2e-3, base, REF, k=2, tol=1e-4)
    assert not bad["passed"] and bad["rule"] == "neither"
    assert bad["min_atol"] == pytest.approx(2.2e-3)


def test_allclose_passes_what_rmse_does_not() -> None:
    exact = REF.clone()
    target = REF * (1 + 5e-3)  # within rtol 1e-2
    g = gate("x", target, exact, REF, k=3, tol=1e-2)
    assert g["passed"] and g["rule"] == "allclose"
    assert g["rel_error"]["max"] == pytest.approx(5e-3, rel=1e-6)
    assert g["min_rtol_at_atol_tol"] == 0.0


def test_nan_and_shape_fail_and_cosine_fallback() -> None:
    nan = REF.clone()
    nan[3] = float("nan")
    assert "NaN" in gate("x", nan, REF, REF, k=2, tol=1e-4)["detail"]
    assert not gate("x", REF[:10], REF, REF, k=2, tol=1e-4)["passed"]
    cos = gate("x", REF * 1.01, REF, None, k=2, tol=1e-4)
    assert cos["kind"] == "cosine" and cos["passed"]
    assert not gate("x", -REF, REF, None, k=2, tol=1e-4)["passed"]


@pytest.mark.parametrize(
    ("side", "precision"),
    [
        ("cpu", "fp32"),
        ("cuda+bf16", "bf16"),
        ("cpu+fp16", "fp16"),
        ("cpu+emulate=matmul-tf32", "tf32"),
        ("cpu+emulate=matmul-bf16", "bf16"),
    ],
)
def test_effective_precision(side: str, precision: str) -> None:
    assert effective_precision(parse_side(side)) == precision
