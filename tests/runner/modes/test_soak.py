"""``soak`` mode: steps for a fixed duration, summarised in windows."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.model.job import SoakPlan
from parity.runner.modes.soak import Reservoir
from tests.fixtures.jobs import run, workload_job


def test_reservoir_is_a_bounded_systematic_sample() -> None:
    r = Reservoir(cap=8)
    for i in range(100):
        r.add(float(i), float(i))
    assert r.n <= 8 and r.stride == 16
    assert list(r.t[: r.n]) == [0.0, 16.0, 32.0, 48.0, 64.0, 80.0, 96.0]


@pytest.mark.slow
def test_a_soak_keeps_windows_and_a_sample_of_steps(tmp_path: Path) -> None:
    plan = SoakPlan(duration_s=2.0, window_s=0.5)
    bundle = run(workload_job("cnn-infer", mode="soak", soak=plan), tmp_path)
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
