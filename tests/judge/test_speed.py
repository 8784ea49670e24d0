"""The verdict's speed section from in-memory bundles: the ratio over processes, the
provisional note, and the compliance checks against process-to-process variation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parity.bundle import Bundle, SideRuns
from parity.judge.speed import judge_speed
from parity.model.verdict import ByRole, Speed
from tests.fixtures import bundles

STEP_S = 0.01


def _bundle(median_s: float, rng: np.random.Generator, *, ok: bool = True) -> Bundle:
    steps = median_s * np.exp(rng.normal(0, 0.03, 60))
    steps *= median_s / float(np.median(steps))  # the median exactly as asked
    man = bundles.manifest(
        role="target", spec="cpu", status="ok" if ok else "failed", reason="it crashed"
    )
    metrics = bundles.metrics([median_s * 20, *steps.tolist()]) if ok else None
    return Bundle(path=Path("unused"), manifest=man, metrics=metrics)


def _side(
    medians: list[float], seed: int, compliance: dict[str, float | None] | None = None
) -> SideRuns:
    rng = np.random.default_rng(seed)
    runs = {
        name: _bundle(STEP_S * (m if m is not None else 1.0), rng, ok=m is not None)
        for name, m in (compliance or {}).items()
    }
    return SideRuns(
        path=Path("unused"),
        repeats=tuple(_bundle(STEP_S * m, rng) for m in medians),
        compliance=runs,
    )


# four processes per side, 2% apart
SPREAD = [1.0, 1.02, 0.98, 1.01]


def _speed(target_compliance: dict[str, float | None], medians: list[float] = SPREAD) -> Speed:
    speed = judge_speed(_side(medians, 1), _side([0.7 * m for m in medians], 2, target_compliance))
    assert speed is not None
    return speed


def test_ratio_interval_and_side_figures() -> None:
    speed = _speed({})
    assert speed.ratio == pytest.approx(0.7)
    assert speed.target_median_s / speed.baseline_median_s == pytest.approx(speed.ratio)
    assert speed.verdict == "faster" and speed.note is None
    iv = speed.interval
    assert iv.low < 0.7 < iv.high and iv.provisional is False
    assert iv.method == "Welch t on log per-process medians" and iv.df > 0
    assert iv.spread.baseline == pytest.approx(np.std(np.log(SPREAD), ddof=1))
    assert speed.repeats == ByRole(baseline=4, target=4)


def test_two_processes_per_side_are_provisional() -> None:
    speed = _speed({}, medians=[1.0, 1.02])
    assert speed.interval.provisional is True and speed.verdict == "undetermined"
    assert "spread not yet estimable" in speed.note


def test_runs_within_process_variation_pass() -> None:
    speed = _speed({"reseeded": 0.7 * 1.01, "same-input": 0.7 * 1.3})
    assert speed.reliable and speed.unreliable_because == ()
    reseeded, same = speed.compliance
    assert reseeded.passed and same.passed  # the identical-input check is one-sided
    assert "within the" in reseeded.detail and "not below the" in same.detail
    assert reseeded.low < 1 < reseeded.high and same.high is None
    assert reseeded.level == 0.98


def test_value_dependent_and_caching_targets_are_caught() -> None:
    speed = _speed({"reseeded": 0.7 * 1.25, "same-input": 0.7 * 0.6})
    reseeded, same = speed.compliance
    assert not reseeded.passed and not same.passed and not speed.reliable
    assert speed.unreliable_because == (reseeded.name, same.name)
    assert reseeded.ratio == pytest.approx(1.25, rel=0.02)
    assert reseeded.detail.startswith("the re-seeded run's median step was 1.2")
    assert "outside the" in reseeded.detail
    assert "that process-to-process variation explains (98% prediction interval" in (
        reseeded.detail
    )
    assert (
        "below the" in same.detail
        and "lower prediction bound from the 8 processes of both sides" in (same.detail)
    )
    for check in (reseeded, same):  # what was seen, no guessed cause
        assert "cache" not in check.detail and "depends" not in check.detail


def test_a_failed_run_fails_and_one_process_per_side_is_not_judged() -> None:
    failed = _speed({"reseeded": None}).compliance[0]
    assert failed.passed is False and "it crashed" in failed.detail
    lone = _speed({"reseeded": 0.7 * 1.5}, medians=[1.0])
    check = lone.compliance[0]
    assert check.passed is None and "not judged" in check.detail
    assert lone.reliable and lone.interval.provisional
    assert lone.note.startswith("undetermined: one process per side")
