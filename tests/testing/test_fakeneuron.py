"""The TorchNeuron-like test device behaves as the 2.33 documentation and the source copy
say TorchNeuron does, where parity can tell (``parity.testing.fakeneuron``).

Each check runs in a process of its own: a process has one PrivateUse1 backend, and this
test process may hold ``parityfake``. The script prints one JSON line of what it saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HAVE_FAKEDEVICE

pytestmark = pytest.mark.skipif(
    not HAVE_FAKEDEVICE, reason="the neuron test device needs a C++ compiler and ninja"
)

SEEN = """
import json, os
from parity.testing import fakeneuron
import torch
import torch_neuronx
out = {"name": torch.neuron.get_device_name(0), "started_at_import": fakeneuron.is_initialized(),
       "blocking": os.environ.get("NEURON_LAUNCH_BLOCKING")}
x = torch.ones(1 << 20, device="neuron")  # 4 MiB
del x
y = torch.ones(1 << 18, device="neuron")  # 1 MiB: the freed block stays cached
torch.neuron.synchronize()
props = torch.neuron.get_device_properties(0)
n = torch.neuron
out.update(props=[props.name, props.total_memory], allocated=n.memory_allocated(),
           reserved=n.memory_reserved(), max_allocated=n.max_memory_allocated(),
           max_reserved=n.max_memory_reserved(), stats=n.memory_stats())
z = torch.nn.functional.gelu(torch.randn(4, 4, device="neuron"))
out["fallbacks"] = sorted(torch_neuronx.get_fallback_ops())
out["fallback_type"] = type(torch_neuronx.get_fallback_ops()).__name__
torch_neuronx.clear_op_tracking()
out["after_clear"] = sorted(torch_neuronx.get_fallback_ops())
def f(t):
    return torch.sin(t) * 2
try:
    torch.compile(f, backend="neuron", dynamic=True)(torch.randn(5, device="neuron"))
    out["dynamic"] = "compiled"
except Exception as exc:
    out["dynamic"] = " ".join(str(exc).split())
torch._dynamo.reset()
def g(t):
    return torch.sin(t) * 2
out["static"] = torch.compile(g, backend="neuron")(torch.ones(3, device="neuron")).cpu().tolist()
print(json.dumps(out))
"""


def seen(tmp: Path, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SEEN)],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            "PARITY_FAKE_NEURON_CORES": str(tmp / "cores"),
            "PARITY_FAKE_UNSUPPORTED": "aten::gelu",
            **env,
        },
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow  # starts an interpreter
def test_names_properties_settings_tracking_and_compile(tmp_path: Path) -> None:
    out = seen(tmp_path)
    assert out["name"] == "neuron:0" and out["started_at_import"] is False
    assert out["props"] == ["trn2", 24 << 30]  # the per-logical-core limit at LNC=2
    assert out["blocking"] == "1"  # set at import, as the release build does
    assert out["fallbacks"] == ["aten::gelu"] and out["fallback_type"] == "set"
    assert out["after_clear"] == []
    assert "does not support dynamic shapes" in out["dynamic"]
    assert out["static"] == pytest.approx([1.682941969] * 3)


@pytest.mark.slow  # starts an interpreter
def test_the_documented_memory_meaning_is_a_caching_allocator(tmp_path: Path) -> None:
    out = seen(tmp_path, PARITY_FAKE_NEURON_MEMORY="docs")
    assert out["reserved"] >= out["allocated"] > 0
    assert out["allocated"] == 1 << 20 and out["reserved"] >= 4 << 20  # the cache is kept
    assert out["max_reserved"] >= out["max_allocated"] == 4 << 20
    stats = out["stats"]
    assert stats["active_bytes"]["current"] <= stats["allocated_bytes"]["current"]


@pytest.mark.slow  # starts an interpreter
def test_the_source_copys_meaning_reports_reserved_as_zero(tmp_path: Path) -> None:
    out = seen(tmp_path, PARITY_FAKE_NEURON_MEMORY="source", NEURON_LOGICAL_NC_CONFIG="1")
    assert out["reserved"] == 0 and out["max_reserved"] == 0 and out["allocated"] > 0
    assert out["stats"]["reserved_bytes"] == {"current": 0, "peak": 0}
    assert out["props"] == ["trn2", 12 << 30]  # eight logical cores a chip at LNC=1


@pytest.mark.slow  # starts an interpreter
def test_a_given_launch_blocking_is_kept_and_tracking_can_be_off(tmp_path: Path) -> None:
    out = seen(tmp_path, NEURON_LAUNCH_BLOCKING="0", PARITY_FAKE_NEURON_TRACKING="0")
    assert out["blocking"] == "0" and out["fallbacks"] == []
