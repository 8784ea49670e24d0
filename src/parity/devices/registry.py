"""The device adapter registry.

``register_device(name, cls)`` adds an adapter; ``get_device(spec)`` builds the adapter
for a side; any device type PyTorch itself knows and no adapter claims (a PrivateUse1
backend such as ``neuron`` or a plugin's device) gets the generic ``Device``.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from parity.devices.base import Device
from parity.devices.cpu import CpuDevice
from parity.devices.cuda import CudaDevice
from parity.devices.neuron import NeuronDevice
from parity.devices.xla import XlaDevice
from parity.plugins import load_plugins


class XpuDevice(Device):
    autocast_policy: ClassVar[str | None] = "cuda"  # ATen registers CUDA's lists for XPU
    dist_backend: ClassVar[str | None] = "xccl"
    install_hint: ClassVar[str] = "install an XPU build of PyTorch on a machine with an Intel GPU"


class MpsDevice(Device):
    install_hint: ClassVar[str] = "run on Apple silicon with a PyTorch build that has MPS"


_REGISTRY: dict[str, type[Device]] = {}


def register_device(name: str, cls: type[Device]) -> None:
    """Register an adapter class under a device type name (plugins call this)."""
    _REGISTRY[name] = cls


def privateuse1_name() -> str | None:
    """The renamed PrivateUse1 backend (``neuron``, a plugin's device), if any."""
    name = str(torch._C._get_privateuse1_backend_name())
    return None if name == "privateuseone" else name


def known_device_types() -> set[str]:
    load_plugins()
    names = set(_REGISTRY)
    extra = privateuse1_name()
    if extra:
        names.add(extra)
    return names


def fork_safe(device_type: str) -> bool:
    """Whether a worker on this device type may be forked from the zygote (the adapter's
    ``fork_safe``; the generic adapter's False for a type no adapter claims)."""
    load_plugins()
    return _REGISTRY.get(device_type, Device).fork_safe


def get_device(device_type: str, index: int | None = None) -> Device:
    """The adapter for a device type (generic where no adapter is registered)."""
    load_plugins()
    cls = _REGISTRY.get(device_type, Device)
    return cls(device_type, index)


register_device("cpu", CpuDevice)
register_device("cuda", CudaDevice)
register_device("neuron", NeuronDevice)
register_device("xpu", XpuDevice)
register_device("mps", MpsDevice)
register_device("xla", XlaDevice)
