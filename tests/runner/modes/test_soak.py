"""``soak`` mode: steps for a fixed duration, summarised in windows."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.model.job import SoakPlan
from parity.runner.modes.soak import Floor, Reservoir, current_rss
from tests.fixtures.jobs import run, workload_job


def test_reservoir_is_a_bounded_systematic_sample() -> None:
    r = Reservoir(cap=8)
    for i in range(100):
        r.add(float(i), float(i))
    assert r.n <= 8 and r.stride == 16
    assert list(r.t[: r.n]) == [0.0, 16.0, 32.0, 48.0, 64.0, 80.0, 96.0]


@pytest.mark.skipif(current_rss() is None, reason="needs /proc/self/statm (Linux)")
def test_the_rss_floor_leaves_out_what_a_window_allocated_and_freed() -> None:
    floor = Floor()
    floor.read()
    before = current_rss()
    assert before is not None
    held = b"\x01" * (64 << 20)  # touched: resident while it lives
    now = current_rss()
    assert now is not None and now > before + (48 << 20)
    floor.read()
    del held
    low = floor.take()
    assert low is not None and low < before + (16 << 20)
    again = floor.take()  # a new window: its own reads only (take reads once more)
    assert again is not None and abs(again - low) < (16 << 20)


@pytest.mark.slow
def test_a_soak_keeps_windows_and_a_sample_of_steps(tmp_path: Path) -> None:
    plan = SoakPlan(duration_s=2.0, window_s=0.5)
    bundle = run(workload_job("cnn-infer", plan=plan), tmp_path)
    assert bundle.ok, bundle.manifest.reason
    metrics = bundle.metrics
    assert metrics is not None and metrics.soak is not None
    soak = metrics.soak
    assert soak.duration_s >= 2.0 and soak.window_s == 0.5 and soak.step_samples_every == 1
    assert 3 <= len(soak.windows) <= 6
    assert sum(w.steps for w in soak.windows) == soak.steps - 1
    assert all(w.device_allocated is None for w in soak.windows)  # the CPU has no allocator
    assert all(w.host_rss for w in soak.windows) and soak.rss_source == "/proc/self/statm"
    assert len(metrics.step_samples_s) == soak.steps
