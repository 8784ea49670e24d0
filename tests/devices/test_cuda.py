"""CUDA checks; they run where a CUDA GPU is present (scripts/gpu-check runs them)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from parity.devices import get_device
from parity.model.job import CheckpointPlan
from tests.fixtures.jobs import run, workload_job

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_cuda_adapter_reads_memory_after_sync() -> None:
    dev = get_device("cuda", 0)
    dev.check_available()
    dev.reset_peak_memory()
    x = torch.ones(1024, 1024, device="cuda")
    peaks = dev.memory_peaks()
    assert peaks.allocated is not None and peaks.allocated >= x.numel() * 4
    now = dev.memory_allocated()
    assert now is not None and now >= x.numel() * 4
    assert dev.name().startswith("NVIDIA") or torch.version.hip
    assert dev.environment().flags["cuda_version"] or torch.version.hip


def test_cuda_rng_state_round_trips() -> None:
    dev = get_device("cuda", 0)
    state = dev.rng_state()
    assert state is not None
    a = torch.rand(4, device="cuda")
    dev.set_rng_state(state)
    assert torch.equal(torch.rand(4, device="cuda"), a)


@pytest.mark.slow
def test_a_cuda_side_runs_in_a_worker(tmp_path: Path) -> None:
    bundle = run(workload_job("cnn-infer", "cuda", capture=True), tmp_path)
    assert bundle.ok, bundle.manifest.reason
    assert bundle.metrics is not None and bundle.capture is not None
    peaks = bundle.metrics.memory.steps.device
    assert peaks.allocated is not None and peaks.allocated > 0
    resolved = bundle.manifest.resolved
    assert resolved is not None and resolved.matmul == "fp32"
    # cuDNN convolutions run fp32 in TF32 by default: the manifest says so
    assert resolved.conv == "tf32"
    assert bundle.capture.available and bundle.capture.layers


@pytest.mark.slow
def test_a_cuda_checkpoint_restores_the_device_generator(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    first = workload_job("mlp-train", "cuda", mode="train_ckpt", steps=6)
    saved = run(
        replace(first, checkpoint=CheckpointPlan(stop_at=3, save_at=3, checkpoint_dir=str(ckpt))),
        tmp_path,
        "first",
    )
    assert saved.ok, saved.manifest.reason
    resumed = run(replace(first, checkpoint=CheckpointPlan(resume_from=str(ckpt))), tmp_path, "b")
    whole = run(first, tmp_path, "whole")
    assert resumed.ok and whole.ok
    assert resumed.losses == pytest.approx(whole.losses, rel=1e-5)
