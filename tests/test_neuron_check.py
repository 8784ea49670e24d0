"""scripts/neuron-check, on this CPU machine: its dry run drives the TorchNeuron-like test
device through every step the Trainium run takes, so the script runs the first time on
real hardware (what it reads there is in docs/neuron.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HAVE_FAKEDEVICE

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not HAVE_FAKEDEVICE, reason="the neuron test device needs c++ and ninja"),
]


def test_the_dry_run_reads_every_fact_and_passes_every_check(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [str(ROOT / "scripts" / "neuron-check")],
        capture_output=True,
        text=True,
        timeout=1800,
        env={
            **os.environ,
            "OUT": str(out),
            "NEURON_CHECK_DRY": "1",
            "NEURON_CHECK_PYTHON": sys.executable,
            "NEURON_CHECK_STEPS": "3",
            "TMPDIR": str(tmp_path),
        },
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert {p.name for p in out.iterdir()} == {
        "log", "summary.txt", "facts.json", "report.md", "verdict.json", "ops.json",
    }  # fmt: skip
    summary = (out / "summary.txt").read_text()
    assert summary.rstrip().endswith("RESULT PASS: 0 check(s) failed")
    for check in (
        "[PASS] MFU against the spec table's per-core peak: trainium2",
        "[PASS] device memory counters recorded with their meaning",
        "[PASS] the expected-error run follows the target's autocast: cpu+bf16+autocast=cuda",
        "[PASS] parity compare never started the runtime itself",
        "[PASS] parity scan never started the runtime itself",
        "[INFO] launch blocking after import: 1",
    ):
        assert check in summary, summary
    facts = json.loads((out / "facts.json").read_text())
    assert facts["names"]["get_device_name(0)"] == "neuron:0"
    assert facts["names"]["properties"]["name"] == "trn2"
    assert facts["changed by import"]["NEURON_LAUNCH_BLOCKING"] == [None, "1"]
    starters = facts["runtime starters"]
    assert starters["at import"] is False
    assert starters["get_device_name(0)"]["runtime started after"] is False
    assert (
        starters["is_available()"]["runtime started after"] is True
    )  # the test device's worst case
    assert facts["spec table"]["entry"] == "trainium2"
    memory = facts["memory"]
    assert memory["after a 1 GiB allocation"]["memory_allocated"] == 1 << 30
    assert memory["parity's reading"]["meaning"] == "caching"
    assert facts["op tracking"]["get_fallback_ops"]["type"] == "set"
    assert facts["autocast"] == {
        "dtypes": {
            "layer_norm": "float32",
            "softmax": "float32",
            "exp": "float32",
            "mm": "bfloat16",
        },
        "policy": "cuda",
    }
    assert facts["torch.compile"]["dynamic=True"].startswith("refused")
    assert facts["a CPU backward starts the runtime"] in ("True", "False")
    assert "## Checks" in (out / "report.md").read_text()
