"""Device names known without importing torch, so that a bad side spec is refused at once.

The built-in adapters' names are listed here (``parity.devices`` registers an adapter for
each). Any other name, such as a PrivateUse1 backend a plugin renames or a plugin's own
device, needs the plugins loaded and torch imported: that happens only for a name not
listed here.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points

from parity.errors import SpecError

BUILTIN = ("cpu", "cuda", "neuron", "xpu", "mps", "xla")
#: device types on which two jobs can run at once without sharing a device (each process
#: gets its own host memory and threads); any accelerator is one device, used in turn
CONCURRENT = frozenset({"cpu"})


#: the built-in device types whose adapters are ``fork_safe`` (a worker on them may be
#: forked from the zygote); kept here so that deciding needs no torch
FORK_SAFE = frozenset({"cpu", "cuda"})


#: whose autocast op lists the built-in device types follow (the adapters'
#: ``autocast_policy``, kept here for what decides without torch: the estimate)
AUTOCAST_POLICY = {"cpu": "cpu", "cuda": "cuda", "neuron": "cuda", "xpu": "cuda"}


def autocast_policy(device: str) -> str | None:
    """The autocast policy a built-in device type follows (None: unknown here)."""
    return AUTOCAST_POLICY.get(device)


def forks(device: str) -> bool:
    """Whether a one-process worker on ``device`` may be forked from the zygote: a
    built-in type from ``FORK_SAFE``; any other from its adapter (a plugin may register
    one that is), which needs the plugins loaded and torch imported, as checking the name
    already did."""
    if device in BUILTIN:
        return device in FORK_SAFE
    if not _others_possible():
        return False
    from parity.devices import fork_safe  # plugins and PrivateUse1: torch

    return fork_safe(device)


def run_together(*devices: str) -> bool:
    """Whether jobs on these device types may run at the same time."""
    return all(d in CONCURRENT for d in devices)


def _others_possible() -> bool:
    """Whether any other device could exist: a parity plugin, or a PyTorch backend that
    autoloads through the ``torch.backends`` entry points (how out-of-tree PrivateUse1
    devices register)."""
    return bool(os.environ.get("PARITY_PLUGINS")) or any(
        entry_points(group=group) for group in ("parity.devices", "torch.backends")
    )


def check_device_name(device: str, spec: str) -> None:
    """Refuse an unknown device type in ``spec``, naming the valid ones."""
    if device in BUILTIN:
        return
    known = set(BUILTIN)
    if _others_possible():
        from parity.devices import known_device_types  # plugins and PrivateUse1: torch

        known = known_device_types()
    if device not in known:
        raise SpecError(
            f"unknown device {device!r} in side spec {spec!r}: use one of "
            f"{', '.join(sorted(known))} (a plugin device must be importable; see "
            "PARITY_PLUGINS)"
        )
