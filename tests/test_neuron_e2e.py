"""``parity compare`` and ``parity scan`` against the TorchNeuron-like test device, as a
user runs them on a Trainium host (issue 56).

The device (``parity.testing.fakeneuron``) is registered as ``neuron`` and driven through
parity's real ``neuron`` adapter: ``get_device_name`` says ``neuron:0``, the properties
``trn2``; its runtime reserves the "cores" for the first process that starts it and
refuses a forked child of a started parent; ``NEURON_LAUNCH_BLOCKING`` is set at import;
ops it has no kernel for run on the CPU silently. Each command runs as a real process
whose pid the test knows, so "the parent never started the runtime" is checked against
the device's own log of the processes that started it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HAVE_FAKEDEVICE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not HAVE_FAKEDEVICE, reason="the neuron test device needs c++ and ninja"),
]


def parity(tmp: Path, *args: str, **env: str) -> tuple[int, int, str, list[tuple[int, int]]]:
    """Run ``parity ARGS`` with the neuron test device: (its pid, exit code, output, and
    ``(pid, parent pid)`` of every process that started the device's runtime)."""
    log = tmp / f"starts-{len(list(tmp.glob('starts-*')))}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "parity", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={
            **os.environ,
            "PARITY_PLUGINS": "parity.testing.fakeneuron",
            "PARITY_FAKE_NEURON_CORES": str(tmp / "cores.lock"),
            "PARITY_FAKE_NEURON_INIT_LOG": str(log),
            "PARITY_CACHE_DIR": str(tmp / "cache"),
            **env,
        },
    )
    out, _ = proc.communicate(timeout=1500)
    starts = (
        [(int(a), int(b)) for a, b, *_ in (ln.split() for ln in log.read_text().splitlines())]
        if log.exists()
        else []
    )
    return proc.pid, proc.returncode, out, starts


def doc(path: Path) -> Any:
    return json.loads(path.read_text())


def test_compare_gpt_train_cpu_against_neuron_bf16(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pid, code, text, starts = parity(
        tmp_path,
        "compare", "gpt-train", "--baseline", "cpu", "--target", "neuron+bf16",
        "--steps", "6", "--repeats", "1", "--no-compliance", "--price", "baseline=1.0",
        "--out", str(out), "--verbose",
    )  # fmt: skip
    assert code == 0, text[-3000:]
    # no runtime in the parent: every start was some other process's
    assert starts and all(p != pid for p, _ in starts)
    target = doc(out / "target" / "r00" / "manifest.json")
    assert target["pid"] in {p for p, _ in starts} and target["launch"] == "spawn"
    device = target["environment"]["device"]
    assert (device["name"], device["model"]) == ("neuron:0", "trn2")
    # the effective launch-blocking value, as after import torch (set by the backend)
    assert device["flags"]["launch_blocking"] == "1"
    assert device["flags"]["compile_disable_fallback_execution"] is None  # unset: None
    # device memory: the per-logical-core limit the device reports, with its meaning
    assert device["memory_bytes"] == 24 << 30
    assert device["memory_source"] == "reported by the neuron device"
    steps = doc(out / "target" / "r00" / "metrics.json")["memory"]["steps"]["device"]
    assert steps["counters"] == {
        "allocated": "reported",
        "reserved": "reported",
        "meaning": "caching",
    }
    assert steps["reserved"] >= steps["allocated"] > 0
    assert "allocated is memory in tensors, reserved what the caching allocator holds" in text
    # MFU against the trn2 peak of one logical NeuronCore at LNC=2
    flops = doc(out / "target" / "r00" / "metrics.json")["flops"]
    assert flops["peak"]["device"] == "trainium2" and flops["peak"]["flops"] == 166.75e12
    assert "logical NeuronCore (LNC=2" in flops["peak"]["unit"] and flops["mfu"] > 0
    assert "of 167 TFLOP/s bf16 per logical NeuronCore (LNC=2" in " ".join(text.split())
    # the cost, from specs.toml with its source, shared by the instance's logical cores
    verdict = doc(out / "verdict.json")
    price = verdict["cost"]["target"]["price"]
    assert price["source"].startswith("specs.toml ") and "UNCONFIRMED" in price["source"]
    assert price["accelerators"] == 4  # trn2.3xlarge: one chip, four logical cores
    assert verdict["cost"]["available"]
    # the expected-error run rounded as the target's autocast did: CUDA's lists
    expected = doc(out / "expected" / "manifest.json")
    assert expected["side"]["spec"] == "cpu+bf16+autocast=cuda"
    assert target["resolved"]["autocast_policy"] == "cuda"
    assert target["resolved"]["autocast_observed"]["layer_norm"] == "float32"
    assert verdict["passed"]


def test_scan_finds_a_silent_cpu_fallback_with_and_without_the_backends_record(
    tmp_path: Path,
) -> None:
    for tracking, name in (("1", "tracked"), ("0", "untracked")):
        out = tmp_path / name
        pid, code, text, starts = parity(
            tmp_path,
            "scan", "gpt-train", "--device", "neuron", "--steps", "2", "--out", str(out),
            PARITY_FAKE_UNSUPPORTED="aten::gelu", PARITY_FAKE_NEURON_TRACKING=tracking,
        )  # fmt: skip
        assert code in (0, 1), text[-3000:]
        assert starts and all(p != pid for p, _ in starts)
        ops = doc(out / "ops.json")
        backend = ops["fallbacks"]["backend"]
        assert "fallback_counts" not in backend  # names only: the backend keeps no counts
        if tracking == "1":
            assert backend["fallback_ops"] == ["aten::gelu"]
            assert "a set of names: no counts" in backend["note"]
        else:
            assert backend["fallback_ops"] == []
        # the scan's own finding: gelu reached the backend's CPU catch-all
        assert [f["op"] for f in ops["fallbacks"]["no_device_kernel"]] == ["aten::gelu"]
        assert ops["summary"]["fallbacks"] == 1 and not ops["clean"]
