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
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from parity.devices.tracking import OpTracker
from parity.model.manifest import DeviceInfo, FlagValue
from parity.model.metrics import DevicePeaks, MemoryCounters

if TYPE_CHECKING:
    from parity.devices.specs import DeviceKey

#: device types whose tensors live in host memory (the CPU, and meta: no memory at all)
HOST_TYPES = frozenset({"cpu", "meta"})


def is_host(device: torch.device | str) -> bool:
    """Whether tensors on this device live in host memory (so no copy, no sync, no queue)."""
    return torch.device(device).type in HOST_TYPES


class Device:
    """A generic device adapter for a device type and optional index."""

    #: pip distributions whose versions belong in the environment manifest
    backend_packages: ClassVar[tuple[str, ...]] = ()
    #: ``torch.compile`` backend used by ``+compile`` without ``=BACKEND``
    default_compile_backend: ClassVar[str] = "inductor"
    #: whether that backend honours ``torch.compile(mode=...)``
    honours_compile_mode: ClassVar[bool] = True
    #: ``torch.distributed`` process-group backend
    dist_backend: ClassVar[str | None] = None
    #: what to tell a user whose machine lacks this device
    install_hint: ClassVar[str] = "install the PyTorch backend package for this device"
    #: the Ray resource a side on this device asks its cluster node for (``--place``)
    cluster_resource: ClassVar[str] = "GPU"
    #: whether a worker forked from the zygote (torch imported, no device touched, no
    #: plugin loaded) may start this device's runtime: False for any runtime that refuses
    #: a fork or starts threads at import (TorchNeuron, XLA, an unknown plugin's device)
    fork_safe: ClassVar[bool] = False
    #: whose autocast op lists ``torch.autocast`` applies on this device type (which ops
    #: run in which dtype): "cuda" for CUDA and ROCm, and for the backends that register
    #: CUDA's lists (TorchNeuron's ``neuron``, XPU); "cpu" for the CPU; None where
    #: unknown. A worker checks it on the device (``probes.autocast_policy.observe``)
    autocast_policy: ClassVar[str | None] = None
    #: whether an op with no kernel of the device's own runs on the CPU (the backend's
    #: catch-all PrivateUse1 kernel is a CPU fallback): the scan then finds such ops
    #: from the dispatcher's registrations, whatever the backend records
    catch_all_runs_on_cpu: ClassVar[bool] = False
    #: whether the steps compute on the host's cores (the CPU): where the host places
    #: their threads then moves the speed, and the runner records it (``probes.handoff``)
    steps_on_host: ClassVar[bool] = False

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
                f"device {self.type}:{self.index} does not exist: this machine has {count}; "
                f"use an index in 0..{count - 1}"
            )

    def count(self) -> int:
        return int(self._call("device_count") or 0)

    def name(self) -> str:
        value = self._call("get_device_name", self._index())
        return str(value) if value else self.type

    def model(self) -> str | None:
        """The name in the device's properties where it differs from :meth:`name`: the
        instance type (``trn2``) on TorchNeuron, whose device name is ``neuron:0``."""
        props = _try_call(self.module(), "get_device_properties", self._index())
        found = getattr(props, "name", None)
        if not isinstance(found, str) or not found or found == self.name():
            return None
        return found

    def logical_nc_config(self) -> int | None:
        """The logical-core setting the device runs at (None: it has none, or the default)."""
        return None

    def spec_key(self) -> DeviceKey:
        """How ``devices/specs.toml`` knows this device (see ``specs.DeviceKey``)."""
        from parity.devices.specs import DeviceKey

        names = tuple(dict.fromkeys(n for n in (self.model(), self.name()) if n))
        return DeviceKey(names=names, logical_nc_config=self.logical_nc_config())

    def _index(self) -> int:
        return self.index if self.index is not None else 0

    # -- setup ------------------------------------------------------------------------
    def activate(self) -> None:
        """Make this device current (multi-device machines)."""
        if self.index is not None:
            self._call("set_device", self.index)

    def for_rank(self, local_rank: int) -> Device:
        """The device a torchrun process of this local rank uses: one device each."""
        return type(self)(self.type, local_rank)

    def ddp_device_ids(self, local_rank: int) -> list[int] | None:
        """``device_ids`` for ``DistributedDataParallel`` (None: the module's own device)."""
        return [local_rank]

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

    def conv_dtype(self, precision: str) -> str:
        """The format convolutions run in for a side's precision."""
        return precision

    # -- random state -----------------------------------------------------------------
    def rng_state(self) -> torch.Tensor | None:
        """The device generator's state (beside the CPU's), or None where there is none."""
        fn = getattr(self.module(), "get_rng_state", None)
        if not callable(fn):
            return None
        try:
            state = fn()
        except Exception:  # a backend without RNG state access
            return None
        return state if isinstance(state, torch.Tensor) else None

    def set_rng_state(self, state: torch.Tensor) -> None:
        """Restore what :meth:`rng_state` returned."""
        fn = getattr(self.module(), "set_rng_state", None)
        if callable(fn):
            fn(state)

    # -- timing and memory ------------------------------------------------------------
    def synchronize(self) -> None:
        """Wait until the device has finished all queued work."""
        mod = self.module()
        fn = getattr(mod, "synchronize", None)
        if callable(fn):
            fn()
            return
        accel = self._accelerator()
        if accel is not None and hasattr(accel, "synchronize"):
            accel.synchronize()

    def _accelerator(self) -> ModuleType | None:
        """``torch.accelerator`` where it drives this device type, else None (it would
        report another device's figures)."""
        accel: ModuleType | None = getattr(torch, "accelerator", None)
        current = getattr(accel, "current_accelerator", None)
        if not callable(current):
            return None
        try:
            found = current()
        except (RuntimeError, AssertionError):
            return None
        return accel if found is not None and found.type == self.type else None

    def reset_peak_memory(self) -> None:
        self.synchronize()
        if self._call("reset_peak_memory_stats") is None:
            fn = getattr(self._accelerator(), "reset_peak_memory_stats", None)
            if callable(fn):
                with contextlib.suppress(RuntimeError, NotImplementedError):
                    fn()

    def memory_peaks(self) -> DevicePeaks:
        """Peak allocated and reserved bytes since the last reset, read after a synchronize,
        with which counters the device reported and what they mean: a reserved counter
        held at zero beside memory in use is recorded as such, not as a figure of 0."""
        self.synchronize()
        allocated = self._memory_figure("max_memory_allocated")
        if allocated is None:
            stats = _try(self.module(), "memory_stats")
            if isinstance(stats, Mapping):
                allocated = find_peak(stats)
        reserved = self._memory_figure("max_memory_reserved")
        counters = MemoryCounters.of(allocated, reserved)
        return DevicePeaks(
            allocated=allocated,
            reserved=reserved if counters.reserved == "reported" else None,
            counters=counters,
        )

    def memory_allocated(self) -> int | None:
        """Bytes the device's allocator holds for tensors now (None: it cannot say)."""
        return self._memory_figure("memory_allocated")

    def _memory_figure(self, fn_name: str) -> int | None:
        value = _try(self.module(), fn_name)
        if value is None:
            value = _try(self._accelerator(), fn_name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    # -- backend reports --------------------------------------------------------------
    def op_tracker(self) -> OpTracker:
        """What the backend reports of ops it ran elsewhere (the generic one: nothing)."""
        return OpTracker()

    # -- reporting --------------------------------------------------------------------
    def environment(self) -> DeviceInfo:
        """Device facts for the manifest: name, count, backend package versions, flags."""
        from parity.devices.specs import device_memory

        key = self.spec_key()
        memory, source = self.total_memory(), f"reported by the {self.type} device"
        if memory is None and (found := device_memory(key)) is not None:
            memory, source = found
        return DeviceInfo(
            type=self.type,
            name=self.name(),
            count=self.count(),
            backend_packages=self.package_versions(),
            flags=self.flags(),
            memory_bytes=memory,
            memory_source=source if memory is not None else None,
            model=self.model(),
            logical_nc_config=key.logical_nc_config,
        )

    def package_versions(self) -> dict[str, str | None]:
        """Versions of the backend's packages (None: not installed)."""
        return package_versions(self.backend_packages)

    def total_memory(self) -> int | None:
        """The memory the device reports (``get_device_properties().total_memory``)."""
        props = _try_call(self.module(), "get_device_properties", self._index())
        total = getattr(props, "total_memory", None)
        return total if isinstance(total, int) and total > 0 else None

    def flags(self) -> dict[str, FlagValue]:
        """Settings that change numerics (TF32 and the like)."""
        return {}


def _try_call(mod: object, name: str, *args: object) -> object:
    fn = getattr(mod, name, None)
    if not callable(fn):
        return None
    try:
        value: object = fn(*args)
    except (RuntimeError, NotImplementedError, AssertionError, TypeError, AttributeError):
        return None
    return value


def _try(mod: object, name: str) -> object:
    fn = getattr(mod, name, None)
    if not callable(fn):
        return None
    try:
        value: object = fn()
    except (RuntimeError, NotImplementedError, AssertionError, TypeError):
        return None
    return value


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
