"""parity's own worker against a PrivateUse1 device: only the device string changes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from parity.model.job import TimingPlan
from tests.fixtures.jobs import run, workload_job

PLUGIN = {"PARITY_PLUGINS": "parity.testing.fakedevice"}
needs_fake = pytest.mark.skipif(
    shutil.which(os.environ.get("CXX", "c++")) is None or shutil.which("ninja") is None,
    reason="building the parityfake extension needs a C++ compiler and ninja",
)


@pytest.mark.slow
@needs_fake
def test_a_side_on_the_privateuse1_device_matches_the_cpu(tmp_path: Path) -> None:
    cpu = run(workload_job("gpt-train", "cpu"), tmp_path, "cpu", env=PLUGIN)
    fake = run(
        workload_job("gpt-train", "parityfake", TimingPlan(capture=True)),
        tmp_path,
        "fake",
        env=PLUGIN,
    )
    assert cpu.ok and fake.ok, fake.manifest.reason
    env = fake.manifest.environment
    assert env is not None and env.device.name == "parity fake accelerator"
    assert fake.manifest.side.device == "parityfake"
    # every op runs the CPU kernel: the numbers are the CPU's, bit for bit
    assert fake.losses == cpu.losses
    assert fake.metrics is not None and cpu.metrics is not None
    allocated = fake.metrics.memory.steps.device.allocated
    assert allocated is not None and allocated > 0
    assert cpu.metrics.memory.steps.device.allocated is None  # the CPU has no allocator
    assert fake.capture is not None and fake.capture.available


@pytest.mark.slow
@needs_fake
def test_an_unsupported_op_fails_the_side_with_its_name(tmp_path: Path) -> None:
    env = {**PLUGIN, "PARITY_FAKE_UNSUPPORTED": "aten::gelu"}
    bundle = run(workload_job("mlp-train", "parityfake"), tmp_path, env=env)
    assert bundle.status == "failed"
    reason = bundle.manifest.reason or ""
    assert "NotImplementedError" in reason and "aten::gelu is not supported" in reason
    # the failure scan lists the op with the line that called it
    assert bundle.ops is not None and [u.op for u in bundle.ops.unsupported] == ["aten::gelu"]


@pytest.mark.slow  # starts an interpreter
def test_the_device_is_unknown_without_the_plugin() -> None:
    code = "from parity.devices.names import check_device_name as c; c('parityfake', 'parityfake')"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PARITY_PLUGINS": ""},
        timeout=120,
    )
    assert proc.returncode == 1
    assert "unknown device 'parityfake'" in proc.stderr
