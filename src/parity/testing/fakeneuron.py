"""``neuron``: a test device that behaves like AWS TorchNeuron wherever parity can tell.

The ``parityfake`` extension (``fakedevice.cpp``) loaded in its neuron profile and
registered as ``neuron``, so parity drives it through its real ``neuron`` adapter
(``parity.devices.neuron``). What it reproduces, from the Neuron 2.33 documentation and a
public copy of torch-neuronx's source (``shared/REFERENCE.md``):

- names: ``get_device_name(i)`` is ``"neuron:i"``; ``get_device_properties(i).name`` is the
  instance type (``trn2``, or ``PARITY_FAKE_NEURON_INSTANCE``) and ``total_memory`` the
  per-logical-core limit at ``NEURON_LOGICAL_NC_CONFIG`` (LNC=2 unless it says 1);
- the runtime: started by the first use of the device in a process (an allocation,
  ``is_available``, ``device_count``, ``synchronize``, a memory query, the properties),
  it reserves the "cores" (a lock file, ``PARITY_FAKE_NEURON_CORES``) until the process
  exits, so a second process that starts it fails; a child forked from a process that
  started it may not use it. ``PARITY_FAKE_NEURON_INIT_LOG`` lists every process that
  started it (``pid ppid``);
- settings at import: ``NEURON_LAUNCH_BLOCKING`` is set to "1" unless given (the source
  copy's release build does so), and launches are then synchronous; with "0" the device
  is asynchronous (``PARITY_FAKE_ASYNC_US`` per kernel, 200 by default);
- memory, two meanings (``PARITY_FAKE_NEURON_MEMORY``): ``docs`` (the default: a caching
  allocator, reserved >= allocated >= active) or ``source`` (the source copy: "allocated"
  is all memory obtained from the runtime, "reserved" always 0, nested stats);
- CPU fallback: an op it has no kernel for (``PARITY_FAKE_UNSUPPORTED`` at load) runs on
  the CPU silently, and ``torch_neuronx.get_fallback_ops()`` returns the set of their names
  (no counts); ``PARITY_FAKE_NEURON_TRACKING=0`` records nothing;
- autocast: CUDA's op lists, as TorchNeuron registers them for ``neuron``;
- ``torch.compile(backend="neuron")``: refuses ``dynamic=True``, runs the graph eagerly.

Where no real ``torch_neuronx`` is installed, a module of that name holding the op
tracking calls is put in ``sys.modules``, so the adapter finds them where it looks.

Importing this module loads and registers the device (a process has one PrivateUse1
backend: not in a process that loaded ``parity.testing.fakedevice``). It starts no
runtime: only using the device does.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.backend_registration import (
    generate_methods_for_privateuse1_backend,
    rename_privateuse1_backend,
)

from parity.testing.fakebuild import build

DEVICE_NAME = "neuron"
PROFILE_ENV = "PARITY_FAKE_PROFILE"
MEMORY_ENV = "PARITY_FAKE_NEURON_MEMORY"
INSTANCE_ENV = "PARITY_FAKE_NEURON_INSTANCE"
CORES_ENV = "PARITY_FAKE_NEURON_CORES"
INIT_LOG_ENV = "PARITY_FAKE_NEURON_INIT_LOG"
UNSUPPORTED_ENV = "PARITY_FAKE_UNSUPPORTED"
ASYNC_ENV = "PARITY_FAKE_ASYNC_US"
MEMORY_MEANINGS = ("docs", "source")
#: device memory a chip, by instance type (the per-core limit is this over the cores)
CHIP_MEMORY = {"trn2": 96 << 30, "trn2n": 96 << 30, "trn2u": 96 << 30, "trn3": 144 << 30}
GIB = 1 << 30

DeviceLike = int | str | torch.device | None
_loaded: Path | None = None


@dataclass(frozen=True)
class DeviceProperties:
    """What ``get_device_properties`` reports in the source copy: a name and a memory."""

    name: str
    total_memory: int


class _Controls:
    """The library's control ops, called past any dispatch mode: TorchNeuron's own calls
    (``_C._neuron_init()`` and the like) are not ATen ops a scan would see."""

    def __getattr__(self, name: str) -> Any:
        op = getattr(torch.ops.parityfake, name)

        def call(*args: Any) -> Any:
            with torch._C._DisableTorchDispatch():
                return op(*args)

        return call


_CONTROLS = _Controls()


def _ops() -> Any:
    return _CONTROLS


# ---------------------------------------------------------------- the module


def _index(device: DeviceLike) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        dev = torch.device(device)
        if dev.type != DEVICE_NAME:
            raise ValueError(f"Expected neuron device, got {dev.type}")
        index = 0 if dev.index is None else dev.index
    if index != 0:
        raise ValueError(f"Invalid device id: {index}")
    return index


def _lazy_init() -> None:
    """Start the runtime (torch calls this before the first tensor on the device)."""
    _ops().start_runtime()


init = _lazy_init


def is_initialized() -> bool:
    return bool(_ops().runtime_is_started())


def _is_in_bad_fork() -> bool:
    return False


def is_available() -> bool:
    try:
        return device_count() > 0
    except Exception:
        return False


def device_count() -> int:
    _lazy_init()
    return 1


def current_device() -> int:
    return 0


def set_device(device: DeviceLike) -> None:
    _index(device)


def synchronize(device: DeviceLike = None) -> None:
    _index(device)
    _ops().synchronize()


def get_device_name(device: int | torch.device = 0) -> str:
    """``neuron:i``, as the source copy says: not the hardware."""
    if isinstance(device, torch.device):
        return str(device)
    if isinstance(device, int):
        return f"neuron:{device}"
    raise ValueError(
        f"Incorrect device argument found, expected torch.device or int type, found {type(device)}"
    )


def get_device_properties(device: DeviceLike = None) -> DeviceProperties:
    _index(device)
    _lazy_init()
    instance = os.environ.get(INSTANCE_ENV, "trn2")
    cores = 8 if os.environ.get("NEURON_LOGICAL_NC_CONFIG", "").strip() == "1" else 4
    return DeviceProperties(
        name=instance, total_memory=CHIP_MEMORY.get(instance, 96 << 30) // cores
    )


def _stats() -> list[int]:
    # [allocated, max_allocated, reserved, max_reserved, live allocations, total]
    _lazy_init()
    return [int(v) for v in _ops().memory_stats()]


def _meaning() -> str:
    value = os.environ.get(MEMORY_ENV, "docs").strip() or "docs"
    if value not in MEMORY_MEANINGS:
        raise ValueError(f"{MEMORY_ENV}={value!r}: use docs or source")
    return value


def memory_stats(device: DeviceLike = None) -> dict[str, Any]:
    """Nested, as both the documentation and the source copy show."""
    _index(device)
    a, a_peak, r, r_peak, live, _ = _stats()
    if _meaning() == "source":
        r = r_peak = 0
    return {
        "allocated_bytes": {"current": a, "peak": a_peak},
        "reserved_bytes": {"current": r, "peak": r_peak},
        "active_bytes": {"current": a, "peak": a_peak},
        "allocation_requests": live,
        "num_ooms": 0,
    }


def memory_allocated(device: DeviceLike = None) -> int:
    _index(device)
    return _stats()[0]


def max_memory_allocated(device: DeviceLike = None) -> int:
    _index(device)
    return _stats()[1]


def memory_reserved(device: DeviceLike = None) -> int:
    _index(device)
    return 0 if _meaning() == "source" else _stats()[2]


def max_memory_reserved(device: DeviceLike = None) -> int:
    _index(device)
    return 0 if _meaning() == "source" else _stats()[3]


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    _index(device)
    _lazy_init()
    _ops().reset_peak_memory_stats()


def empty_cache() -> None:
    _ops().empty_cache()


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float32, torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def get_rng_state(device: DeviceLike = None) -> torch.Tensor:
    _index(device)
    return torch.default_generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = None) -> None:
    _index(device)
    torch.default_generator.set_state(new_state)


# ------------------------------------------------------- torch_neuronx's calls


def get_fallback_ops() -> set[str]:
    """The names of the ops that ran on the CPU in this process (no counts)."""
    return set(_ops().fallback_ops())


def get_executed_ops() -> set[str]:
    return set(_ops().executed_ops())


def clear_op_tracking() -> None:
    _ops().clear_op_tracking()


def _backend_module() -> types.ModuleType:
    """A stand-in ``torch_neuronx`` holding the op tracking calls."""
    module = types.ModuleType("torch_neuronx", "parity's test stand-in for torch_neuronx")
    module.__dict__.update(
        get_fallback_ops=get_fallback_ops,
        get_executed_ops=get_executed_ops,
        clear_op_tracking=clear_op_tracking,
        __version__="0+parity.fakeneuron",
    )
    return module


# ------------------------------------------------------------ compile backend


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **_: Any) -> Any:
    """``torch.compile(backend="neuron")``: dynamic shapes are refused, as the real
    backend refuses them; the graph then runs eagerly."""
    dynamic = any(isinstance(x, torch.SymInt) for x in example_inputs) or any(
        isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in x.shape)
        for x in example_inputs
    )
    if dynamic:
        raise RuntimeError(
            "the neuron backend does not support dynamic shapes: compile with dynamic=False "
            "(a new shape recompiles)"
        )
    return gm.forward


# ----------------------------------------------------------------- loading


def load() -> Path:
    """Build (once) and register ``neuron``; idempotent."""
    global _loaded
    if _loaded is not None:
        return _loaded
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", DEVICE_NAME):
        raise RuntimeError(f"PrivateUse1 is already registered as {current!r}; the fake needs it")
    os.environ[PROFILE_ENV] = "neuron"  # read by the library as it loads
    os.environ.setdefault("NEURON_LAUNCH_BLOCKING", "1")  # the source copy's release default
    library = build()
    torch.ops.load_library(str(library))  # type: ignore[no-untyped-call]
    if not bool(_ops().profile_is_neuron()):
        raise RuntimeError("the fake device's library was loaded before in another profile")
    if current != DEVICE_NAME:
        rename_privateuse1_backend(DEVICE_NAME)
    if getattr(torch, DEVICE_NAME, None) is None:
        torch._register_device_module(DEVICE_NAME, sys.modules[__name__])  # type: ignore[no-untyped-call]
    if not hasattr(torch.Tensor, f"is_{DEVICE_NAME}"):
        generate_methods_for_privateuse1_backend()
    if importlib.util.find_spec("torch_neuronx") is None and "torch_neuronx" not in sys.modules:
        sys.modules["torch_neuronx"] = _backend_module()
    _ops().set_unsupported(
        sorted({n if "::" in n else f"aten::{n}" for n in _split(os.environ.get(UNSUPPORTED_ENV))})
    )
    _ops().set_caching(_meaning() == "docs")
    blocking = os.environ.get("NEURON_LAUNCH_BLOCKING") == "1"
    cost_us = 0.0 if blocking else float(os.environ.get(ASYNC_ENV) or 200)
    _ops().set_kernel_cost_ns(round(cost_us * 1000))
    from torch._dynamo import list_backends, register_backend

    if "neuron" not in list_backends(exclude_tags=()):
        register_backend(neuron_backend, name="neuron")
    # backward on the calling thread (see parity.testing.fakedevice)
    torch._C._set_multithreading_enabled(False)
    _loaded = library
    return library


def _split(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


load()
