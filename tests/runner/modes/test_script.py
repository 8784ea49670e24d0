"""Script mode in the worker: the hooks that time a user's script and read its losses,
and ``python -m parity.runner.worker`` running a script-mode job."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import _BaseDataLoaderIter

from parity.bundle import load_bundle, seal
from parity.model.codec import dumps
from parity.runner.documents import Steps
from parity.runner.modes.script import NO_PROBE, ScriptProbe
from tests.conftest import FIXTURES
from tests.fixtures.jobs import run, script_job

SCRIPT = FIXTURES / "train_script.py"


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptProbe]:
    ticks = itertools.count(0, 1_000_000)  # a fake clock: 1 ms per reading
    monkeypatch.setattr(ScriptProbe, "clock", staticmethod(lambda: next(ticks)))
    syncs: list[int] = []
    p = ScriptProbe(lambda: syncs.append(1))
    p.install()
    try:
        yield p
    finally:
        p.uninstall()
    assert len(syncs) == len(p.step_ends_ns)


def _loop(steps: int, *, second: bool = False, scaler: bool = False) -> list[float]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    head = nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt2 = torch.optim.SGD(head.parameters(), lr=0.1)
    amp = torch.amp.GradScaler("cpu", init_scale=1024.0) if scaler else None
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    seen = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(head(model(x)) if second else model(x), y)
        seen.append(loss.item())
        if amp is not None:
            amp.scale(loss).backward()
            amp.step(opt)
            amp.update()
        else:
            loss.backward()
            opt.step()
        if second:
            opt2.step()
    return seen


def test_probe_records_one_step_and_one_loss_per_optimizer_step(probe: ScriptProbe) -> None:
    seen = _loop(3)
    assert len(probe.step_ends_ns) == 3 and probe.backward_calls == 3
    assert probe.losses() == pytest.approx(seen)
    assert probe.first_call_ns is not None and probe._forward_handle is None
    samples = probe.samples_ns(0)
    assert len(samples) == 3 and all(s > 0 for s in samples)


def test_a_second_optimizer_is_counted_but_is_no_step_boundary(probe: ScriptProbe) -> None:
    _loop(2, second=True)
    assert len(probe.step_ends_ns) == 2
    assert probe.optimizer_steps == {"SGD": 4}


def test_a_scaled_loss_is_recorded_unscaled(probe: ScriptProbe) -> None:
    seen = _loop(2, scaler=True)
    assert probe.losses() == pytest.approx(seen)


def test_uninstall_restores_torch() -> None:
    backward, autograd_backward = torch.Tensor.backward, torch.autograd.backward
    loader_iter, loader_next = DataLoader.__iter__, _BaseDataLoaderIter.__next__
    p = ScriptProbe(lambda: None)
    p.install()
    assert torch.Tensor.backward is not backward
    assert DataLoader.__iter__ is not loader_iter
    p.uninstall()
    assert torch.Tensor.backward is backward and torch.autograd.backward is autograd_backward
    assert DataLoader.__iter__ is loader_iter and _BaseDataLoaderIter.__next__ is loader_next


def test_the_wait_for_each_batch_is_summed_per_step(probe: ScriptProbe) -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(12, 4), torch.randint(0, 2, (12,)))
    first = next(iter(DataLoader(data, batch_size=4)))  # before step 0: its load
    assert probe.batches == 1 and probe.pending_wait_ns > 0
    for _ in range(2):  # two epochs of three batches: one step per batch
        for x, y in DataLoader(data, batch_size=4):
            F.cross_entropy(model(x), y).backward()
            opt.step()
    assert first is not None and probe.batches == 7 and len(probe.step_waits_ns) == 6
    # on the fake clock (1 ms a reading): step 0 starts at the first forward, after its
    # batch; the StopIteration that ends an epoch and the next __iter__ fall in the next
    # epoch's first step
    assert probe.step_waits_ns == [0, 1_000_000, 1_000_000, 3_000_000, 1_000_000, 1_000_000]
    steps = Steps.of(probe.samples_ns(0))
    fed = probe.input_pipeline(steps)
    assert fed is not None and fed.source == "script" and fed.copy_s is None
    assert fed.steps == len(steps.seconds) - steps.steady_from


def test_a_script_without_a_data_loader_has_no_input_pipeline(probe: ScriptProbe) -> None:
    _loop(3)
    assert probe.batches == 0 and probe.input_pipeline(Steps.of(probe.samples_ns(0))) is None


@pytest.mark.slow
def test_the_worker_runs_a_script_mode_job(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    out.mkdir()
    job = script_job(SCRIPT, "--device", "cpu", "--steps", "5", side="cpu+bf16")
    (out / "job.json").write_text(dumps(job))
    proc = subprocess.run(
        [sys.executable, "-m", "parity.runner.worker", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "step    5" in proc.stdout  # the script's own output
    seal(out)  # what the parent does once the worker is done
    bundle = load_bundle(out)
    assert bundle.ok and bundle.manifest.script_mode
    assert bundle.manifest.workload.description.script_mode
    resolved = bundle.manifest.resolved
    assert resolved is not None and resolved.autocast_dtype == "bfloat16"
    assert resolved.steps is None and resolved.items_per_step is None
    metrics = bundle.metrics
    assert metrics is not None and metrics.script is not None
    assert len(metrics.step_samples_s) == 5 and metrics.script.optimizer_steps == {"AdamW": 5}
    assert metrics.throughput.steps_per_s is not None and metrics.phases.script_s is not None
    assert metrics.memory.steps.host_peak_rss is not None
    assert len(bundle.losses) == 5 and all(x is not None and x > 0 for x in bundle.losses)
    assert bundle.capture is not None and bundle.capture.error == NO_PROBE
    # the script's DataLoader: its waits are measured, its copies not attributed
    fed = metrics.input_pipeline
    assert fed is not None and fed.source == "script" and fed.copy_samples_s is None


@pytest.mark.slow
def test_a_script_whose_loader_is_slow_is_input_bound(tmp_path: Path) -> None:
    # waits of twice the step's own time, as measured on this machine
    job = script_job(SCRIPT, "--device", "cpu", "--steps", "8", "--decode-ratio", "2")
    bundle = run(job, tmp_path)
    assert bundle.ok, bundle.manifest.reason
    fed = bundle.metrics.input_pipeline if bundle.metrics is not None else None
    assert fed is not None and fed.input_bound, fed
    assert fed.input_share > 0.5 and fed.prefetched_s is None


FAILING = """
import os, sys, torch
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(4, 2)).pow(2).mean()
    loss.backward()
    opt.step()
    if step == 1 and os.environ["PARITY_PRECISION"] == "bf16":
        sys.exit(4)
"""


@pytest.mark.slow
def test_a_script_that_exits_non_zero_fails_its_side(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text(FAILING)
    failed = run(script_job(script, side="cpu+bf16"), tmp_path, "target")
    assert failed.status == "failed"
    assert failed.manifest.reason == (
        "RuntimeError in phase 'script': the script exited with code 4"
    )
    ok = run(replace(script_job(script), role="baseline"), tmp_path, "baseline")
    assert ok.ok and len(ok.losses) == 3
