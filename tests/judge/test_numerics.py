from __future__ import annotations

import numpy as np
import pytest

from parity.judge.fp64 import gate
from parity.model.ops import InventoryRow, OpsCensus
from parity.model.precision import effective_precision, expected_side, runs_convolutions
from parity.model.spec import parse_side
from parity.report import words

REF = np.linspace(-2, 2, 1000, dtype=np.float64)


def test_rmse_rule_scales_with_the_baseline_error() -> None:
    base = REF + 1e-3
    ok = gate("x", REF + 1.9e-3, base, REF, k=2, tol=1e-4)
    assert ok.passed and ok.rule == "rmse"
    assert ok.bound == pytest.approx(2e-3 + 1e-5)
    bad = gate("x", REF + 2.2e-3, base, REF, k=2, tol=1e-4)
    assert not bad.passed and bad.rule == "neither"
    assert bad.min_atol == pytest.approx(2.2e-3)


def test_allclose_passes_what_rmse_does_not() -> None:
    exact = REF.copy()
    target = REF * (1 + 5e-3)  # within rtol 1e-2
    g = gate("x", target, exact, REF, k=3, tol=1e-2)
    assert g.passed and g.rule == "allclose"
    assert g.rel_error.max == pytest.approx(5e-3, rel=1e-6)
    assert g.min_rtol_at_atol_tol == 0.0


def test_the_expected_runs_error_joins_the_bound_when_larger() -> None:
    fp32_baseline = REF + 1e-7
    expected = REF + 1e-2  # what bf16 alone does on the CPU
    g = gate("x", REF - 2.5e-2, fp32_baseline, REF, k=3, tol=1e-2, e=expected)
    assert g.passed and g.rule == "rmse" and g.comparator == "expected"
    assert g.rmse_expected == pytest.approx(1e-2) and g.bound == pytest.approx(3 * 1e-2 + 1e-3)
    assert not gate("x", REF - 2.5e-2, fp32_baseline, REF, k=3, tol=1e-2).passed
    # an expected run that is not finite (fp16 overflow) is no comparator
    broken = expected.copy()
    broken[0] = float("inf")
    assert gate("x", REF, fp32_baseline, REF, k=3, tol=1e-2, e=broken).rmse_expected is None


def test_allclose_scales_its_atol_with_the_output() -> None:
    small = REF * 1e-3  # outputs much smaller than 1
    off = small + 5e-3  # 5e-3 absolute: within an absolute atol of 1e-2, yet 400% off
    g = gate("x", off, small, small, k=3, tol=1e-2)
    assert not g.allclose and not g.passed


@pytest.mark.parametrize(
    ("target", "precision", "expected"),
    [
        ("cuda", "fp32", None),
        ("cuda+bf16", "bf16", "cpu+bf16"),
        ("neuron+fp16", "fp16", "cpu+fp16"),
        ("cpu+emulate=matmul-bf16", "bf16", "cpu+emulate=matmul-bf16"),
        ("cuda", "tf32", "cpu+emulate=matmul-tf32"),
    ],
)
def test_the_expected_run_is_the_cpu_at_the_targets_precision(
    target: str, precision: str, expected: str | None
) -> None:
    side = expected_side(parse_side(target), precision)
    assert (str(side) if side is not None else None) == expected


def test_nan_and_shape_fail_and_cosine_fallback() -> None:
    nan = REF.copy()
    nan[3] = float("nan")
    assert "NaN" in str(words.detail(gate("x", nan, REF, REF, k=2, tol=1e-4)))
    assert not gate("x", REF[:10], REF, REF, k=2, tol=1e-4).passed
    cos = gate("x", REF * 1.01, REF, None, k=2, tol=1e-4)
    assert cos.kind == "cosine" and cos.passed
    assert not gate("x", -REF, REF, None, k=2, tol=1e-4).passed


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


CUDA_DEFAULT = {"matmul_fp32_math": "ieee", "conv_fp32_math": "tf32"}


@pytest.mark.parametrize(
    ("side", "flags", "convolutions", "precision"),
    [
        # cuDNN runs fp32 convolutions in TF32 by default: a CNN on cuda is judged as tf32
        ("cuda", CUDA_DEFAULT, True, "tf32"),
        # ... a run without convolutions keeps the fp32 gate
        ("cuda", CUDA_DEFAULT, False, "fp32"),
        ("cuda", {"matmul_fp32_math": "ieee", "conv_fp32_math": "ieee"}, True, "fp32"),
        ("cuda", {"matmul_fp32_math": "tf32", "conv_fp32_math": "ieee"}, False, "tf32"),
        ("cuda", {"matmul_fp32_math": "unknown", "conv_fp32_math": "unknown"}, True, "fp32"),
        ("cuda", None, True, "fp32"),
        ("cpu", {"num_threads": 2}, True, "fp32"),
        # a reduced precision or an emulation profile says so itself
        ("cuda+bf16", CUDA_DEFAULT, True, "bf16"),
        ("cpu+emulate=matmul-bf16", CUDA_DEFAULT, True, "bf16"),
    ],
)
def test_effective_precision_reads_recorded_tf32_modes(
    side: str, flags: dict[str, str] | None, convolutions: bool, precision: str
) -> None:
    assert effective_precision(parse_side(side), flags, convolutions=convolutions) == precision


def _census(*ops: str) -> OpsCensus:
    rows = tuple(
        InventoryRow(
            op=op,
            phase="forward",
            dtypes=("f32",),
            shapes=(),
            distinct_shapes=1,
            count_per_step=(1,),
            custom=False,
        )
        for op in ops
    )
    return OpsCensus(inventory=rows)


def test_runs_convolutions_reads_the_op_inventory() -> None:
    cnn = _census("aten::add.Tensor", "aten::conv2d.default")
    mlp = _census("aten::linear.default", "aten::relu.default")
    assert runs_convolutions(cnn) and not runs_convolutions(mlp)
    assert runs_convolutions(None) and runs_convolutions(OpsCensus())  # unknown: it may
    assert not runs_convolutions(_census("aten::convolution_overrideable.x"))
