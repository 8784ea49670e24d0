"""The parent never starts a device runtime: it asks a short-lived subprocess which
accelerator the machine has (``parity.devices.probe``), for every device alike.

The ground truth is the TorchNeuron-like test device (``parity.testing.fakeneuron``):
its runtime reserves the "cores" for the first process that starts it and refuses a
forked child of a started parent, so a parent that started it would starve every
worker after it. Each "parent" runs in a process of its own (a process has one
PrivateUse1 backend; this test process may hold ``parityfake``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from parity.request import values
from tests.conftest import HAVE_FAKEDEVICE

#: every test here starts a fresh interpreter that imports torch
pytestmark = pytest.mark.slow
needs_fake = pytest.mark.skipif(
    not HAVE_FAKEDEVICE, reason="the neuron test device needs a C++ compiler and ninja"
)


def fake_neuron_env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PARITY_PLUGINS": "parity.testing.fakeneuron",
        "PARITY_FAKE_NEURON_CORES": str(tmp / "cores.lock"),
        "PARITY_FAKE_NEURON_INIT_LOG": str(tmp / "starts.log"),
    }


def starts(tmp: Path) -> list[tuple[int, int]]:
    """``(pid, parent pid)`` of every process that started the runtime."""
    path = tmp / "starts.log"
    if not path.exists():
        return []
    return [
        (int(a), int(b)) for a, b, *_ in (line.split() for line in path.read_text().splitlines())
    ]


def run_parent(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_a_machine_without_an_accelerator_defaults_to_cpu_bf16() -> None:
    assert values.default_target() == "cpu+bf16"


@needs_fake
def test_default_target_finds_neuron_without_starting_its_runtime_here(tmp_path: Path) -> None:
    """The parent learns "neuron" from a child that started the runtime and exited: the
    parent never imported torch for it, and can start the runtime itself afterwards (it
    could not, were the child still holding the cores)."""
    done = run_parent(
        """
        import os, sys
        from parity.request import values
        found = values.default_target()
        print("torch imported:", "torch" in sys.modules)
        from parity.testing import fakeneuron
        import torch
        print("started here:", fakeneuron.is_initialized())
        torch.ones(2, device="neuron")  # a worker's first allocation
        print(found, os.getpid())
        """,
        fake_neuron_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    found, parent = lines[-1].split()
    assert found == "neuron"
    assert "torch imported: False" in lines and "started here: False" in lines
    # one start by the probe, a child of the parent, then the parent's own allocation
    (probe, probe_parent), (later, _) = starts(tmp_path)
    assert probe_parent == int(parent) and probe != int(parent) and later == int(parent)


@needs_fake
def test_the_test_device_catches_a_parent_that_asks_torch_itself(tmp_path: Path) -> None:
    """The control: asking ``torch.accelerator`` in the parent (as parity did before)
    starts the runtime there, and a worker after it cannot get the cores, nor can a
    child forked from that parent."""
    done = run_parent(
        """
        import os, subprocess, sys
        from parity.testing import fakeneuron
        import torch
        assert torch.accelerator.is_available()
        worker = subprocess.run(
            [sys.executable, "-c",
             "from parity.testing import fakeneuron; import torch; torch.ones(1, device='neuron')"],
            capture_output=True, text=True)
        print("worker exit", worker.returncode, worker.stderr.strip().splitlines()[-1])
        pid = os.fork()
        if pid == 0:
            try:
                torch.ones(1, device="neuron")
                os._exit(0)
            except RuntimeError:
                os._exit(7)
        print("forked child exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        """,
        fake_neuron_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert "worker exit 1 RuntimeError: NRT: failed to acquire NeuronCores" in done.stdout
    assert "forked child exit 7" in done.stdout
