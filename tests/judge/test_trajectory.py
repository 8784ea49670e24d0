"""The loss trajectory gate and the non-finite checks, on synthetic curves."""

from __future__ import annotations

import math

import pytest

from parity.judge.tolerances import TABLE
from parity.judge.trajectory import WINDOW, loss_trajectory
from parity.report import words

FP32, BF16 = TABLE["fp32"], TABLE["bf16"]
REF = [2.3 - 0.02 * i for i in range(30)]


def off(curve: list[float], by: float, start: int = 0) -> list[float | None]:
    return [x + (by if i >= start else 0.0) for i, x in enumerate(curve)]


def test_a_target_within_k_times_the_baseline_passes_every_step() -> None:
    base = off(REF, 1e-6)
    check = loss_trajectory(base, off(REF, 1.9e-6), REF, None, FP32)
    assert check.passed and check.first_failing_step is None and check.steps == 30
    assert check.comparator == "baseline" and check.drift_from_step is None
    assert check.worst_ratio is not None and check.worst_ratio <= 1


def test_a_deviation_from_step_k_fails_at_step_k() -> None:
    base = off(REF, 1e-6)
    target = off(off(REF, 1e-6), 2e-3, start=5)  # fine until step 4
    check = loss_trajectory(base, target, REF, None, FP32)
    assert not check.passed and check.first_failing_step == 5
    assert check.worst_ratio is not None and check.worst_ratio > 1


def test_the_comparator_is_its_largest_error_so_far() -> None:
    """A baseline whose error crosses zero by chance does not tighten the bound."""
    base = [r + (1e-4 if i == 3 else 1e-9) for i, r in enumerate(REF)]
    target = off(REF, 1.5e-4, start=4)
    assert loss_trajectory(base, target, REF, None, FP32).passed


def test_a_reduced_precision_target_is_judged_against_the_expected_run() -> None:
    base = off(REF, 1e-7)  # fp32 baseline: far smaller errors than bf16 makes
    expected = off(REF, 3e-2)  # the CPU at bf16
    target = off(REF, -4e-2)
    with_expected = loss_trajectory(base, target, REF, expected, BF16)
    assert with_expected.passed and with_expected.comparator == "expected"
    # the rule is the same: k x the comparator; without the expected run bf16 fails
    assert not loss_trajectory(base, off(REF, -8e-2), REF, None, BF16).passed


def test_it_turns_statistical_where_the_runs_drift_apart() -> None:
    # the comparator drifts beyond 1e-3 relative from step 10 on (fp32's drift threshold)
    drift = [0.0 if i < 10 else 5e-3 * (i - 9) for i in range(30)]
    base = [r + d for r, d in zip(REF, drift, strict=True)]
    # one step far out, then back: noise once the runs have drifted apart
    target: list[float | None] = [r + 1.5 * d for r, d in zip(REF, drift, strict=True)]
    target[20] = REF[20] + 4 * drift[20]  # twice the pointwise bound
    check = loss_trajectory(base, target, REF, None, FP32)
    assert check.drift_from_step == 10 and words.drift(check) is not None
    assert f"windows of {WINDOW} steps" in (words.drift(check) or "")
    assert check.passed
    # a sustained excess fails even so
    worse = [r + 4 * d for r, d in zip(REF, drift, strict=True)]
    failed = loss_trajectory(base, worse, REF, None, FP32)
    assert not failed.passed and failed.first_failing_step is not None
    assert failed.first_failing_step >= 10


@pytest.mark.parametrize(
    ("base", "target", "ref", "gated", "detail"),
    [
        (REF, off(REF, 0)[:-1], REF, True, "lengths differ"),
        (REF, [*REF[:3], None, *REF[4:]], REF, True, "target's loss is not finite at step 3"),
        ([None, *REF[1:]], REF, REF, True, "baseline's loss is not finite at step 0"),
        (REF, REF, [*REF[:7], None, *REF[8:]], False, "reference's loss is not finite"),
    ],
)
def test_curves_it_cannot_gate_say_why(
    base: list[float | None],
    target: list[float | None],
    ref: list[float | None],
    gated: bool,
    detail: str,
) -> None:
    check = loss_trajectory(base, target, ref, None, FP32)
    assert check.gated == gated and check.passed is (False if gated else None)
    assert detail in (words.detail(check) or "")


def test_the_bounds_are_finite_numbers() -> None:
    check = loss_trajectory(REF, REF, REF, REF, FP32)
    assert check.passed and check.worst_ratio == 0.0
    assert check.final_error_target is not None and math.isfinite(check.final_error_target)
