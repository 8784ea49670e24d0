"""Whether a side can run on this machine, found before anything is written.

A side spec is checked for form when it is parsed (``parity.model.spec``), but whether its
device exists, its compile backend is registered and its thread count fits the machine
needs torch and, for a device, its runtime. The ``freeze`` worker that prepares the
workload (forked from the zygote, before any bundle or output directory exists) asks
``unusable`` for each side; a side that cannot run ends the command with exit code 2
and one line (``parity.errors.DeviceError``), instead of a failed bundle later.
"""

from __future__ import annotations

import os

from parity.devices.registry import get_device
from parity.model.spec import SideSpec


def usable_cores() -> int:
    """The logical cores this process may run on (its affinity where the OS says)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1


def unusable(side: SideSpec) -> str | None:
    """Why ``side`` cannot run here, with the fix; None when it can."""
    device = get_device(side.device, side.index)
    try:
        device.check_available()
    except RuntimeError as exc:
        return str(exc)
    if side.compile:
        backend = side.compile_backend or device.default_compile_backend
        known = _compile_backends()
        if known is not None and backend not in known[0]:
            return (
                f"compile backend {backend!r} is not registered with torch.compile here: "
                f"use one of {', '.join(known[1])} (compile=BACKEND) or install the "
                "package that registers it"
            )
    cores = usable_cores()
    if side.threads is not None and side.threads > cores:
        return (
            f"threads={side.threads} is more than the {cores} logical cores this machine "
            f"offers: use threads=1..{cores}"
        )
    return None


def _compile_backends() -> tuple[set[str], list[str]] | None:
    """Every registered backend, and those to suggest (not debug or experimental ones)."""
    try:
        from torch._dynamo import list_backends

        return set(list_backends(exclude_tags=())), sorted(list_backends())
    except Exception:  # a torch without dynamo: leave it to the worker
        return None
