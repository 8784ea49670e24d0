from __future__ import annotations

import pytest
import torch

from parity.devices import get_device, known_device_types
from parity.devices.base import Device, find_peak, is_host
from parity.devices.cpu import CpuDevice
from parity.model.metrics import DevicePeaks


def test_registry_names_the_usual_devices() -> None:
    assert {"cpu", "cuda", "neuron", "xpu", "mps"} <= known_device_types()


def test_cpu_adapter() -> None:
    dev = get_device("cpu")
    assert isinstance(dev, CpuDevice)
    assert dev.is_available() and dev.count() == 1
    dev.synchronize()
    assert dev.memory_peaks() == DevicePeaks(allocated=None, reserved=None)
    assert dev.memory_allocated() is None and dev.rng_state() is None
    assert dev.torch_device == torch.device("cpu")
    info = dev.environment()
    assert info.type == "cpu" and info.count == 1
    assert info.flags["num_threads"] == torch.get_num_threads()
    # every rank of a torchrun side shares the one CPU, and DDP takes no device ids
    assert dev.for_rank(1) is dev and dev.ddp_device_ids(1) is None
    assert dev.matmul_dtype("fp32") == "fp32" and dev.conv_dtype("fp32") == "fp32"
    assert dev.conv_dtype("bf16") == "bf16"


def test_unregistered_device_gets_the_generic_adapter() -> None:
    dev = get_device("hpu")
    assert type(dev) is Device and dev.autocast_type == "hpu"
    # without the backend, every optional figure is unknown rather than an error
    assert dev.memory_allocated() is None and dev.rng_state() is None
    assert dev.for_rank(3).index == 3 and dev.ddp_device_ids(3) == [3]


def test_host_memory_is_the_cpu_and_meta() -> None:
    assert is_host("cpu") and is_host(torch.device("meta"))
    assert not is_host("cuda:0") and not is_host(torch.device("hpu"))


def test_cuda_convolutions_follow_cudnn_tf32(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = get_device("cuda")
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert dev.conv_dtype("fp32") == "tf32" and dev.conv_dtype("bf16") == "bf16"
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert dev.conv_dtype("fp32") == "fp32"


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


def test_a_worker_is_forked_only_where_the_adapter_allows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The torch-free list of built-ins agrees with the adapters; a type no adapter
    claims (a PrivateUse1 backend) is spawned; a plugin's adapter decides for its own."""
    from parity.devices import fork_safe, register_device
    from parity.devices.names import BUILTIN, FORK_SAFE, forks

    assert {name for name in BUILTIN if get_device(name).fork_safe} == FORK_SAFE == {"cpu", "cuda"}
    assert all(forks(name) == (name in FORK_SAFE) for name in BUILTIN)
    monkeypatch.setenv("PARITY_PLUGINS", "")
    assert not forks("hpu")  # no plugin could name it: decided without torch
    assert not fork_safe("hpu")  # the generic adapter

    class Safe(Device):
        fork_safe = True

    monkeypatch.setattr("parity.devices.registry._REGISTRY", {})
    register_device("hpu", Safe)
    monkeypatch.setenv("PARITY_PLUGINS", "parity.devices.cpu")  # any plugin makes it ask
    assert forks("hpu") and not forks("neuron")
