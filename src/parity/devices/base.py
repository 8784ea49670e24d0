"""The device adapter: what parity needs to know about a device, and nothing else.

The generic ``Device`` works for any device type PyTorch knows, PrivateUse1 backends
such as TorchNeuron's ``neuron`` included: it goes through ``torch.get_device_module``
and ``torch.accelerator`` and probes optional functions with ``getattr``. A concrete
adapter overrides only what differs for its device. A base class never names a concrete
device; the registry (``parity.devices``) maps names to adapters.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

import torch


class Device:
    """A generic device adapter for a device type and optional index."""

    #: pip distributions whose versions belong in the environment manifest
    backend_packages: ClassVar[tuple[str, ...]] = ()
    #: ``torch.compile`` backend used by ``+compile`` without ``=BACKEND``
    default_compile_backend: ClassVar[str] = "inductor"
    #: ``torch.distributed`` process-group backend
    dist_backend: ClassVar[str | None] = None
    #: what to tell a user whose machine lacks this device
    install_hint: ClassVar[str] = "install the PyTorch backend package for this device"

    def __init__(self, device_type: str, index: int | None = None) -> None:
        self.type = device_type
        self.index = index

    # -- identity ---------------------------------------------------------------------
    @property
    def torch_device(self) -> torch.device:
        return (
            torch.device(self.type, self.index)
            if self.index is not None
            else torch.device(self.type)
        )

    @property
    def autocast_type(self) -> str:
        """The ``device_type`` argument of ``torch.autocast`` for this device."""
        return self.type

    def module(self) -> ModuleType | None:
        """``torch.<device>``-like module, or None when PyTorch has none for this type."""
        try:
            module: ModuleType = torch.get_device_module(self.type)
        except (RuntimeError, AttributeError):
            return None
        return module

    def _call(self, name: str, *args: Any) -> Any:
        fn = getattr(self.module(), name, None)
        return fn(*args) if callable(fn) else None

    def is_available(self) -> bool:
        value = self._call("is_available")
        return bool(value)

    def check_available(self) -> None:
        """Raise RuntimeError with a fix when the device cannot be used here."""
        if not self.is_available():
            raise RuntimeError(
                f"device {self.type!r} is not available on this machine: {self.install_hint}"
            )
        count = self.count()
        if self.index is not None and count and self.index >= count:
            raise RuntimeError(
                f"device {self.type}:{self.index} does not exist: this machine has {count} "
                f"(indices 0..{count - 1})"
            )

    def count(self) -> int:
        return int(self._call("device_count") or 0)

    def name(self) -> str:
        value = self._call("get_device_name", self._index())
        return str(value) if value else self.type

    def _index(self) -> int:
        return self.index if self.index is not None else 0

    # -- setup ------------------------------------------------------------------------
    def activate(self) -> None:
        """Make this device current (multi-device machines)."""
        if self.index is not None:
            self._call("set_device", self.index)

    def enable_determinism(self) -> list[str]:
        """Device-specific settings for ``+deterministic``; returns what was set."""
        return []

    def environment_variables(self) -> tuple[str, ...]:
        """Names (or prefixes ending in ``_``) of env vars that change this device's behaviour."""
        return ()

    def matmul_dtype(self, precision: str) -> str:
        """The format matmuls run in for a side's precision (selects the peak FLOP/s)."""
        if precision != "fp32":
            return precision
        return "fp32" if torch.get_float32_matmul_precision() == "highest" else "tf32"

    # -- timing and memory ------------------------------------------------------------
    def synchronize(self) -> None:
        """Wait until the device has finished all queued work."""
        mod = self.module()
        fn = getattr(mod, "synchronize", None)
        if callable(fn):
            fn()
            return
        accel = getattr(torch, "accelerator", None)
        if accel is not None and hasattr(accel, "synchronize"):
            accel.synchronize()

    def reset_peak_memory(self) -> None:
        self.synchronize()
        if self._call("reset_peak_memory_stats") is None:
            accel = getattr(torch, "accelerator", None)
            fn = getattr(accel, "reset_peak_memory_stats", None)
            if callable(fn):
                with contextlib.suppress(RuntimeError, NotImplementedError):
                    fn()

    def memory_peaks(self) -> dict[str, int | None]:
        """Peak allocated and reserved bytes since the last reset, read after a synchronize."""
        self.synchronize()
        peaks: dict[str, int | None] = {"allocated": None, "reserved": None}
        for key, fn_name in (
            ("allocated", "max_memory_allocated"),
            ("reserved", "max_memory_reserved"),
        ):
            value = _try(self.module(), fn_name)
            if value is None:
                value = _try(getattr(torch, "accelerator", None), fn_name)
            peaks[key] = value
        if peaks["allocated"] is None:
            stats = _try(self.module(), "memory_stats")
            if isinstance(stats, Mapping):
                peaks["allocated"] = find_peak(stats)
        return peaks

    # -- reporting --------------------------------------------------------------------
    def environment(self) -> dict[str, Any]:
        """Device facts for the manifest: name, count, backend package versions, flags."""
        return {
            "type": self.type,
            "name": self.name(),
            "count": self.count(),
            "backend_packages": package_versions(self.backend_packages),
            "flags": self.flags(),
        }

    def flags(self) -> dict[str, Any]:
        """Settings that change numerics (TF32 and the like)."""
        return {}


def _try(mod: object, name: str) -> int | None:
    fn = getattr(mod, name, None)
    if not callable(fn):
        return None
    try:
        value = fn()
    except (RuntimeError, NotImplementedError, AssertionError, TypeError):
        return None
    return value if isinstance(value, int) else None


def find_peak(stats: Mapping[str, Any]) -> int | None:
    """Find a peak-allocated figure in a memory-stats mapping that may be nested.

    CUDA has flat keys (``allocated_bytes.all.peak``); other backends nest them. The
    largest integer under a key path that mentions both "alloc" and "peak" wins.
    """
    best: int | None = None

    def walk(node: Mapping[str, Any], path: str) -> None:
        nonlocal best
        for key, value in node.items():
            full = f"{path}.{key}".lower()
            if isinstance(value, Mapping):
                walk(value, full)
            elif isinstance(value, int) and "alloc" in full and "peak" in full:
                best = value if best is None else max(best, value)

    walk(stats, "")
    return best


def package_versions(names: tuple[str, ...]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out
