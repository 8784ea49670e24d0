"""Device adapters: the generic ``Device``, one adapter per device type, and the registry.

The names import lazily, so that ``parity.devices.names`` (checking a side spec) does
not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parity.devices.base import Device
    from parity.devices.registry import get_device, known_device_types, register_device

__all__ = ["Device", "get_device", "known_device_types", "register_device"]


def __getattr__(name: str) -> Any:
    if name == "Device":
        from parity.devices.base import Device

        return Device
    if name in __all__:
        from parity.devices import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'parity.devices' has no attribute {name!r}")
