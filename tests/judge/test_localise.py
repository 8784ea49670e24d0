"""Localisation against the expected error of the target's precision, on synthetic
per-module captures of a chain of modules (each one's input is the previous output)."""

from __future__ import annotations

import math

import torch

from parity.judge.localise import localise
from parity.judge.tolerances import TABLE
from parity.model.numerics import LayerRecord, TensorSummary

NAMES = [f"layers.{i}" for i in range(6)]
SUMMARY = TensorSummary(shape=(256,), dtype="float32", numel=256)
LAYERS = [LayerRecord(name=n, type="Linear", leaf=True, output=SUMMARY) for n in NAMES]
Tensors = dict[str, torch.Tensor]


def reference() -> Tensors:
    g = torch.Generator().manual_seed(0)
    outs = [torch.randn(256, generator=g, dtype=torch.float64) for _ in NAMES]
    tensors = {f"layer.out.{n}": o for n, o in zip(NAMES, outs, strict=True)}
    tensors.update({f"layer.in.{n}": o for n, o in zip(NAMES[1:], outs, strict=False)})
    return tensors


def side(ref: Tensors, errors: list[float], seed: int) -> Tensors:
    """``ref`` with a relative error per module output (``math.inf``: not finite); each
    module's input carries the previous module's output error."""
    g = torch.Generator().manual_seed(seed)
    out: Tensors = {}
    for i, name in enumerate(NAMES):
        for key, rel in ((f"layer.out.{name}", errors[i]), (f"layer.in.{name}", errors[i - 1])):
            if key not in ref:
                continue
            x = ref[key]
            noise = torch.randn(x.shape, generator=g, dtype=torch.float64)
            scale = x.pow(2).mean().sqrt() / noise.pow(2).mean().sqrt()
            value = x + (rel if math.isfinite(rel) else 1.0) * scale * noise
            if not math.isfinite(rel):
                value[0] = float("nan")
            out[key] = value.float()
    return out


BF16 = [4e-3 * math.sqrt(i + 1) for i in range(6)]  # bf16 rounding, growing downstream
FP32 = [1e-7 * (i + 1) for i in range(6)]


def first(ta: Tensors, tb: Tensors, ref: Tensors, te: Tensors | None, row: str) -> str | None:
    _, diverging = localise(LAYERS, ta, tb, ref, te, TABLE[row])
    return diverging[0].module if diverging else None


def test_a_clean_bf16_target_names_no_module() -> None:
    ref = reference()
    base, expected = side(ref, FP32, 1), side(ref, BF16, 2)
    target = side(ref, [1.5 * e for e in BF16], 3)  # another device's bf16: similar errors
    assert first(base, target, ref, expected, "bf16") is None


def test_a_fault_in_one_module_of_a_bf16_target_names_that_module() -> None:
    ref = reference()
    base, expected = side(ref, FP32, 1), side(ref, BF16, 2)
    faulty = [*BF16[:3], 5e-2, 5.5e-2, 6e-2]  # layers.3 is wrong; the rest inherit it
    target = side(ref, faulty, 3)
    rows, diverging = localise(LAYERS, base, target, ref, expected, TABLE["bf16"])
    assert [r.module for r in diverging] == ["layers.3"]
    row = diverging[0]
    assert row.excess is not None and row.excess > 1
    assert row.expected_error is not None and row.target_error is not None
    assert row.target_error > 4 * row.expected_error
    # downstream the error is explained by the input it was handed
    later = next(r for r in rows if r.module == "layers.4")
    assert later.excess is not None and later.excess < 1
    assert later.explained is not None and later.expected_error is not None
    assert later.explained > later.expected_error


def test_without_the_expected_run_bf16_is_judged_against_fp32_and_names_the_first_module() -> None:
    """Why the expected-error run exists: an fp32 baseline's errors explain no bf16."""
    ref = reference()
    target = side(ref, BF16, 3)
    assert first(side(ref, FP32, 1), target, ref, None, "bf16") == "layers.0"


def test_the_first_module_whose_output_is_not_finite_is_named() -> None:
    ref = reference()
    base = side(ref, FP32, 1)
    target = side(ref, [*FP32[:2], math.inf, math.inf, math.inf, math.inf], 3)
    _, diverging = localise(LAYERS, base, target, ref, None, TABLE["fp32"])
    assert diverging[0].module == "layers.2" and diverging[0].target_error is None
    assert [r.module for r in diverging] == ["layers.2"]  # the rest had a non-finite input


def test_fp32_errors_like_the_baseline_name_none_and_a_fault_is_named() -> None:
    ref = reference()
    base = side(ref, FP32, 1)
    assert first(base, side(ref, [2 * e for e in FP32], 3), ref, None, "fp32") is None
    faulty = [*FP32[:4], 1e-2, 1e-2]
    assert first(base, side(ref, faulty, 3), ref, None, "fp32") == "layers.4"
