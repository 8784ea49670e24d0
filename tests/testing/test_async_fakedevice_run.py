"""parity's own figures on the asynchronous parityfake device, end to end.

A worker runs ``mlp-train`` on ``parityfake`` with every kernel costing COST_US of
device time after the op returns (``PARITY_FAKE_ASYNC_US``). The kernels of each step
are counted here, in this process, on the synchronous device, running the steps the
worker runs; so each step time (the first included) has a floor, its kernels' cost, that
it reaches only if the timer waits for the device. The memory peaks must equal what the
same steps allocate on the synchronous device: nothing the queue still held may be
missing. (A generation workload synchronises at every token, which would hide a step
timer that forgets to; TTFT and ITL are tested in tests/workloads/test_builtin.py.)
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from parity import api
from parity.model.spec import SideSpec, WorkloadSpec
from parity.request import RunRequest
from parity.runner.load import load_model
from parity.workloads import resolve
from parity.workloads.base import RunContext
from parity.workloads.frozen import materialize
from tests.conftest import HAVE_FAKEDEVICE, needs_fakedevice

if HAVE_FAKEDEVICE:
    from parity.testing import fakedevice

DEV = "parityfake"
COST_US = 2000  # launching a kernel takes a tenth of this or less on one busy core
SPEC = WorkloadSpec(name="mlp-train", steps=6)

pytestmark = [pytest.mark.slow, needs_fakedevice]


@dataclass(frozen=True, kw_only=True)
class Replica:
    """The worker's steps, run in this process on the synchronous device."""

    kernels_per_step: tuple[int, ...]
    peaks: dict[str, int]  # peak allocated bytes per memory phase, as the worker reads them


def _replicate() -> Replica:
    """Load, reset, step 0, reset, the other steps: the worker's order (runner/phases.py)."""
    assert fakedevice.async_us() == 0
    workload = resolve(SPEC)
    weights, data = materialize(workload)
    dev = torch.device(DEV)
    before = fakedevice.memory_allocated()  # what other tests left alive in this process
    fakedevice.reset_peak_memory_stats()
    model = load_model(workload, weights).to(dev)
    on_device = {k: v.to(dev) for k, v in data.items()}
    peaks = {"load": fakedevice.max_memory_allocated() - before}
    ctx = RunContext(device=dev, side=SideSpec(device=DEV), autocast_type=DEV)
    runner = workload.make_runner(model, on_device, ctx)
    counts = [fakedevice.kernel_count()]
    fakedevice.reset_peak_memory_stats()
    for i in range(workload.steps):
        runner.step(i)
        counts.append(fakedevice.kernel_count())
        if i == 0:
            peaks["first_step"] = fakedevice.max_memory_allocated() - before
            fakedevice.reset_peak_memory_stats()
    peaks["steps"] = fakedevice.max_memory_allocated() - before
    return Replica(
        kernels_per_step=tuple(b - a for a, b in itertools.pairwise(counts)), peaks=peaks
    )


@pytest.fixture(scope="module")
def replica() -> Replica:
    return _replicate()


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("async") / "run"
    options = dict(workload=SPEC.name, steps=SPEC.steps, out=str(out))
    env = {"PARITY_PLUGINS": "parity.testing.fakedevice", "PARITY_FAKE_ASYNC_US": str(COST_US)}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        # one thread: two threads on a busy two-core machine launch kernels slowly
        bundle = api.run(RunRequest.from_kwargs("run", device=f"{DEV}+threads=1", **options)).bundle
    assert bundle.ok, bundle.manifest.reason
    assert json.loads((out / "manifest.json").read_text())["status"] == "ok"
    result: dict[str, Any] = json.loads((out / "metrics.json").read_text())
    return result


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.1f} ms"


def test_step_and_first_step_times_hold_the_queued_work(
    metrics: dict[str, Any], replica: Replica
) -> None:
    floors = [k * COST_US * 1000 for k in replica.kernels_per_step]
    samples = [s * 1e9 for s in metrics["step_samples_s"]]
    assert len(samples) == len(floors) == SPEC.steps
    first = metrics["phases"]["first_step_s"] * 1e9
    assert first >= floors[0], f"first step: {_ms(first)} < its queued work {_ms(floors[0])}"
    for i, (sample, floor) in enumerate(zip(samples, floors, strict=True)):
        assert sample >= floor, f"step {i}: {_ms(sample)} < its queued work {_ms(floor)}"
    assert metrics["summary"]["median"] * 1e9 >= min(floors[1:])


def test_memory_peaks_hold_what_the_queued_work_allocated(
    metrics: dict[str, Any], replica: Replica
) -> None:
    phases = ("load", "first_step", "steps")
    seen = {phase: metrics["memory"][phase]["device"]["allocated"] for phase in phases}
    assert seen == replica.peaks
    assert replica.peaks["first_step"] > replica.peaks["load"]  # the step allocates
