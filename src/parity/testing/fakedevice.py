"""``parityfake``: an accelerator-like test device registered through PrivateUse1.

It is registered the way out-of-tree backends such as AWS TorchNeuron register
``neuron``: a C++ extension (``fakedevice.cpp``) provides a device guard, an
allocator, PrivateUse1 hooks and kernels, and this module renames PrivateUse1 to
``parityfake`` and serves as its device module (``torch.parityfake``).

The device's memory is host memory. Allocation, copies and views have kernels of
their own; every other op runs the CPU kernel through a boxed fallback, so its
results are bit-identical to the CPU. Ops named in the *unsupported* set (from
``PARITY_FAKE_UNSUPPORTED``, comma-separated, or :func:`set_unsupported`) raise
``NotImplementedError("<op> is not supported on parityfake")`` instead. Only ops
that reach the fallback can be refused: composite ops such as ``aten::linear``
decompose first (into ``aten::addmm`` and friends), as on a real backend, and
the device's own kernels (allocation, copies, views) always work.

With ``PARITY_FAKE_ASYNC_US`` set (or :func:`set_async_us`), the device is
asynchronous, as CUDA and ``neuron`` are: each kernel (an op, a copy) costs that
many microseconds of device time, which runs on after the op returns. Results are
still computed at once on the host (so they stay the CPU's bit for bit); what is
modelled is when the work is done: ``synchronize`` (here or through
``torch.accelerator``) sleeps until the queued work's modelled end, blocking copies
to or from the CPU and host reads (``.item()``, ``nonzero``) wait for it too,
events carry device times, and memory counters count an allocation or a free when
the device reaches it, so figures read without a synchronize miss queued work. It
is an environment switch on the one device rather than a second device, because
PrivateUse1 gives a process one backend name, and because parity must treat an
asynchronous device exactly as the synchronous one: through its generic adapter.

Importing this module builds the extension (once, cached under
``PARITY_FAKEDEVICE_BUILD_DIR`` or ``~/.cache/parity/fakedevice``) and registers
the device, with the generic adapter declared ``fork_safe`` (``FakeDevice``): the
zygote loads no plugin, so a forked worker loads the extension itself, and the device
starts no thread. A real PrivateUse1 backend without such a declaration is spawned.

It also turns off autograd multithreading for the importing thread, so backward
passes on ``parityfake`` run on the calling thread, as CPU ones do. With a
worker thread per device (the default for accelerators), torch 2.13 has two
problems here: that thread drops a Python object after backward returns, which
aborts the process ("terminate called without an active exception") when the
interpreter exits within a few milliseconds of a backward pass; and autograd
sizes its device threads once, so a backward pass run before this module was
imported leaves none for ``parityfake`` (an internal assert). Other threads keep
the default: import this module before their first backward pass.

Random ops run on the host and draw from the CPU default generator, so seeding
this device seeds that generator.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
from torch.utils.backend_registration import (
    generate_methods_for_privateuse1_backend,
    rename_privateuse1_backend,
)

from parity.devices.base import Device
from parity.testing.fakebuild import BUILD_DIR_ENV as BUILD_DIR_ENV
from parity.testing.fakebuild import build
from parity.testing.fakebuild import build_dir as build_dir

DEVICE_NAME = "parityfake"
UNSUPPORTED_ENV = "PARITY_FAKE_UNSUPPORTED"
ASYNC_ENV = "PARITY_FAKE_ASYNC_US"

DeviceLike = int | str | torch.device | None

_library: Path | None = None


@dataclass(frozen=True)
class DeviceProperties:
    """What ``get_device_properties`` reports (a subset of CUDA's fields)."""

    name: str
    total_memory: int
    multi_processor_count: int = 1


# -------------------------------------------------------------- registering


class FakeDevice(Device):
    """The generic adapter (parity treats this device as any PrivateUse1 backend), forked
    from the zygote like the CPU: its runtime is the host's."""

    fork_safe: ClassVar[bool] = True
    #: the extension registers CUDA's autocast op lists for the device
    autocast_policy: ClassVar[str | None] = "cuda"


def load() -> Path:
    """Build (once) and register ``parityfake``; return the extension's path.

    Idempotent. Raises RuntimeError if PrivateUse1 already belongs to another
    backend in this process.
    """
    global _library
    if _library is not None:
        return _library
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", DEVICE_NAME):
        raise RuntimeError(f"PrivateUse1 is already registered as {current!r}; parityfake needs it")
    if os.environ.get("PARITY_FAKE_PROFILE") == "neuron":  # inherited: not this profile
        os.environ["PARITY_FAKE_PROFILE"] = ""
    library = build()
    torch.ops.load_library(str(library))  # type: ignore[no-untyped-call]
    if current != DEVICE_NAME:
        rename_privateuse1_backend(DEVICE_NAME)
    if getattr(torch, DEVICE_NAME, None) is None:
        torch._register_device_module(DEVICE_NAME, sys.modules[__name__])  # type: ignore[no-untyped-call]
    if not hasattr(torch.Tensor, f"is_{DEVICE_NAME}"):
        generate_methods_for_privateuse1_backend()
    from parity.devices.registry import register_device

    register_device(DEVICE_NAME, FakeDevice)
    set_unsupported(_split(os.environ.get(UNSUPPORTED_ENV, "")))
    set_async_us(_async_from_env(os.environ.get(ASYNC_ENV, "")))
    # Run backward passes on the calling thread rather than on autograd's
    # per-device worker thread (see the module docstring).
    torch._C._set_multithreading_enabled(False)
    _library = library
    return library


# --------------------------------------------------------- unsupported ops


def _split(value: str) -> list[str]:
    return [part for part in (p.strip() for p in value.split(",")) if part]


def _normalise(name: str) -> str:
    name = name.strip()
    if "::" not in name:
        name = f"aten::{name}"
    if "." in name.split("::", 1)[1]:
        raise ValueError(
            f"{name!r}: give the operator name without an overload (matching covers every overload)"
        )
    return name


def set_unsupported(names: Iterable[str]) -> None:
    """Make exactly these ops (e.g. ``aten::gelu``; bare names mean ``aten::``) fail."""
    torch.ops.parityfake.set_unsupported(sorted({_normalise(n) for n in names}))


def unsupported() -> frozenset[str]:
    """The op names that currently raise NotImplementedError."""
    return frozenset(str(n) for n in torch.ops.parityfake.get_unsupported())


# ------------------------------------------------------- asynchronous mode


def _async_from_env(value: str) -> float:
    if not value.strip():
        return 0.0
    try:
        cost = float(value)
    except ValueError:
        cost = math.nan
    if not math.isfinite(cost) or cost < 0:
        raise ValueError(
            f"{ASYNC_ENV}={value!r} is not a kernel cost in microseconds: set it to a "
            "number >= 0 (e.g. 200), or unset it for a synchronous device"
        )
    return cost


def set_async_us(microseconds: float) -> None:
    """Give each kernel this much device time, run after the op returns (0: synchronous).

    Waits for the work queued under the old setting first.
    """
    if not math.isfinite(microseconds) or microseconds < 0:
        raise ValueError(
            f"a kernel's cost must be a number of microseconds >= 0, got {microseconds}"
        )
    torch.ops.parityfake.set_kernel_cost_ns(round(microseconds * 1000))


@contextlib.contextmanager
def asynchronous(microseconds: float) -> Iterator[None]:
    """Run a block on the asynchronous device; the previous setting comes back after."""
    before = async_us()
    set_async_us(microseconds)
    try:
        yield
    finally:
        set_async_us(before)


def async_us() -> float:
    """The device time of one kernel in microseconds; 0 when the device is synchronous."""
    return int(torch.ops.parityfake.kernel_cost_ns()) / 1000


def kernel_count() -> int:
    """How many kernels (ops and copies, each counted once) the device has run."""
    return int(torch.ops.parityfake.kernel_count())


def queued_ns() -> int:
    """Device time still queued: how long a synchronize would wait now."""
    return int(torch.ops.parityfake.queued_ns())


# ----------------------------------------------------------- device module


def _index(device: DeviceLike) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        dev = torch.device(device)
        if dev.type != DEVICE_NAME:
            raise ValueError(f"expected a {DEVICE_NAME} device, got {dev}")
        index = 0 if dev.index is None else dev.index
    if index != 0:
        raise ValueError(f"{DEVICE_NAME} has one device (index 0), got {index}")
    return index


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _library is not None


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def set_device(device: DeviceLike) -> None:
    _index(device)


def synchronize(device: DeviceLike = None) -> None:
    """Wait until the queued work is done (counted; see :func:`sync_count`)."""
    _index(device)
    torch.ops.parityfake.synchronize()


def sync_count() -> int:
    """How many times the device was synchronized (here or via torch.accelerator)."""
    return int(torch.ops.parityfake.sync_count())


def get_device_name(device: DeviceLike = None) -> str:
    _index(device)
    return "parity fake accelerator"


def get_device_properties(device: DeviceLike = None) -> DeviceProperties:
    _index(device)
    return DeviceProperties(name=get_device_name(), total_memory=_memory_stats()[5])


def get_device_capability(device: DeviceLike = None) -> tuple[int, int]:
    _index(device)
    return (1, 0)


def _memory_stats() -> list[int]:
    # [allocated, max_allocated, reserved, max_reserved, live allocations, total]
    return [int(v) for v in torch.ops.parityfake.memory_stats()]


def memory_allocated(device: DeviceLike = None) -> int:
    _index(device)
    return _memory_stats()[0]


def max_memory_allocated(device: DeviceLike = None) -> int:
    _index(device)
    return _memory_stats()[1]


def memory_reserved(device: DeviceLike = None) -> int:
    """Equal to :func:`memory_allocated`: the allocator keeps no cache."""
    _index(device)
    return _memory_stats()[2]


def max_memory_reserved(device: DeviceLike = None) -> int:
    _index(device)
    return _memory_stats()[3]


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    _index(device)
    torch.ops.parityfake.reset_peak_memory_stats()


def empty_cache() -> None:
    """Nothing is cached."""


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def _is_in_bad_fork() -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Seed the host generator that the device's random ops draw from."""
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def get_rng_state(device: DeviceLike = None) -> torch.Tensor:
    _index(device)
    return torch.default_generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = None) -> None:
    _index(device)
    torch.default_generator.set_state(new_state)


load()
