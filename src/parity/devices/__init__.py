"""Device adapters: the generic ``Device``, one adapter per device type, and the registry.

The names import lazily, so that ``parity.devices.names`` (checking a side spec) does
not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parity.lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from parity.devices.base import Device
    from parity.devices.registry import (
        fork_safe,
        get_device,
        known_device_types,
        register_device,
    )

__all__ = ["Device", "fork_safe", "get_device", "known_device_types", "register_device"]


__getattr__ = _lazy_names(
    "parity.devices",
    {"Device": "parity.devices.base", **dict.fromkeys(__all__[1:], "parity.devices.registry")},
)
