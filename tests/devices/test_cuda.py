"""CUDA checks; they run where a CUDA GPU is present (scripts/gpu-check runs them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from parity.devices import get_device
from tests.conftest import run_cli

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
    assert peaks["allocated"] is not None and peaks["allocated"] >= x.numel() * 4
    assert dev.name().startswith("NVIDIA") or torch.version.hip
    assert dev.environment()["flags"]["cuda_version"] or torch.version.hip


@pytest.mark.slow
def test_cpu_against_cuda_end_to_end(tmp_path: Path) -> None:
    cmp = run_cli(
        "compare",
        "mlp-train",
        "--baseline",
        "cpu",
        "--target",
        "cuda",
        "--repeats",
        "2",
        "--out",
        str(tmp_path / "c"),
        "--json",
    )
    assert cmp.returncode in (0, 1), cmp.stderr
    v = json.loads(cmp.stdout)
    assert v["sides"]["target"]["status"] == "ok"
    assert v["quality"]["passed"], v["quality"]
    mem = v["memory"]["target"]["steps"]["device"]
    assert mem["allocated"] and mem["allocated"] > 0
