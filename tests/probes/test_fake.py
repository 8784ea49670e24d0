"""Tests for the seeded fake clock that drives parity's timing and statistics tests."""

from __future__ import annotations

import numpy as np
import pytest

from parity.probes.fake import FakeClock


def test_same_seed_same_times() -> None:
    a = FakeClock(1, 1e-3, 0.05, 10, 2.0).step_times(50)
    b = FakeClock(1, 1e-3, 0.05, 10, 2.0).step_times(50)
    c = FakeClock(2, 1e-3, 0.05, 10, 2.0).step_times(50)
    assert a == b and a != c and len(a) == 50


def test_planted_warmup_curve_without_noise() -> None:
    t = FakeClock(0, 2e-3, 0.0, 4, 3.0).step_times(8)
    assert t == pytest.approx([6e-3, 5e-3, 4e-3, 3e-3, 2e-3, 2e-3, 2e-3, 2e-3])


def test_no_warmup_is_flat() -> None:
    assert FakeClock(0, 1e-3, 0.0, 0, 5.0).step_times(3) == pytest.approx([1e-3] * 3)


def test_lognormal_noise_has_median_base() -> None:
    t = np.array(FakeClock(3, 1e-3, 0.1, 0, 1.0).step_times(20_000))
    assert np.median(t) == pytest.approx(1e-3, rel=0.01)
    assert np.std(np.log(t)) == pytest.approx(0.1, rel=0.05)
    assert t.min() > 0


def test_each_call_is_a_fresh_process() -> None:
    clock = FakeClock(0, 1e-3, 0.0, 3, 2.0, process_noise_rel=0.1)
    first, second = clock.step_times(5), clock.step_times(5)
    assert first[0] / first[-1] == pytest.approx(2.0)  # warm-up replayed
    assert second[0] / second[-1] == pytest.approx(2.0)
    assert first[-1] != pytest.approx(second[-1])  # a new process factor


def test_drift_runs_across_processes() -> None:
    clock = FakeClock(0, 1e-3, 0.0, 0, 1.0, drift_per_step=0.01)
    assert clock.step_times(3) == pytest.approx([1e-3, 1.01e-3, 1.02e-3])
    assert clock.step_times(1) == pytest.approx([1.03e-3])
    assert clock.steps_total == 4


def test_step_advances_the_modelled_time() -> None:
    clock = FakeClock(0, 1e-3, 0.0, 2, 3.0)
    t0 = clock.time()
    costs = [clock.step() for _ in range(3)]
    assert costs == pytest.approx([3e-3, 2e-3, 1e-3])
    assert clock.time() - t0 == pytest.approx(6e-3)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"base_s": 0.0}, "base_s"),
        ({"noise_rel": -0.1}, "noise_rel"),
        ({"warmup_steps": -1}, "warmup_steps"),
        ({"warmup_factor": 0.5}, "warmup_factor"),
    ],
)
def test_rejects_bad_settings(kw: dict[str, float], match: str) -> None:
    args: dict[str, float] = {
        "base_s": 1e-3,
        "noise_rel": 0.0,
        "warmup_steps": 0,
        "warmup_factor": 1.0,
    }
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        FakeClock(0, **args)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n must be"):
        FakeClock(0, 1e-3, 0.0, 0, 1.0).step_times(-1)
