from __future__ import annotations

import torch

from parity.devices import get_device, known_device_types
from parity.devices.base import Device, find_peak
from parity.devices.cpu import CpuDevice


def test_registry_names_the_usual_devices() -> None:
    assert {"cpu", "cuda", "neuron", "xpu", "mps"} <= known_device_types()


def test_cpu_adapter() -> None:
    dev = get_device("cpu")
    assert isinstance(dev, CpuDevice)
    assert dev.is_available() and dev.count() == 1
    dev.synchronize()
    assert dev.memory_peaks() == {"allocated": None, "reserved": None}
    assert dev.torch_device == torch.device("cpu")
    assert dev.environment()["type"] == "cpu"


def test_unregistered_device_gets_the_generic_adapter() -> None:
    dev = get_device("hpu")
    assert type(dev) is Device and dev.autocast_type == "hpu"


def test_neuron_adapter_knows_its_backend_without_the_hardware() -> None:
    dev = get_device("neuron")
    assert dev.default_compile_backend == "neuron" and dev.dist_backend == "neuron"
    assert not dev.is_available()
    try:
        dev.check_available()
    except RuntimeError as exc:
        assert "torch-neuronx" in str(exc)
    else:
        raise AssertionError("neuron should not be available here")


def test_find_peak_in_nested_stats() -> None:
    flat = {"allocated_bytes.all.peak": 100, "allocated_bytes.all.current": 5}
    nested = {
        "device": {"memory": {"allocated": {"peak": 300, "current": 1}}},
        "reserved": {"peak": 999},
    }
    assert find_peak(flat) == 100
    assert find_peak(nested) == 300
    assert find_peak({"x": 1}) is None
