"""The software stacks of two sides: which packages differ, and drift from pinned versions.

Packages that differ are named one by one (added on the target, removed from it, another
version, or the same version from another origin): torch first, then the backend packages
(``BACKEND``: the packages a device backend brings, by name or prefix), then the rest
alphabetically. A plan's pins (``[stack]``, ``pins=``, ``--pin``) are checked on both
sides: a pinned package installed outside its pin, or missing, is drift. Drift is
reported prominently and does not fail a gate: what was installed is what was measured.

Bundles written before parity kept the package list have only a digest: their
difference is the digest's, and a pin is checked against the versions such a manifest
does name (torch and the device's backend packages), else reported as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping

from parity.model.manifest import Environment, PipFreeze
from parity.model.stack import Package, PackageChange, PackageDifference, PinCheck, Pins, PinStatus
from parity.versions import normalise, parse_pin

#: torch and the packages device backends bring (Neuron, XLA, CUDA, ROCm, Intel, Ascend)
BACKEND = frozenset(
    {
        "torch",
        "torch-neuronx",
        "neuronx-cc",
        "neuronx-distributed",
        "libneuronxla",
        "torch-xla",
        "libtpu",
        "triton",
        "pytorch-triton",
        "pytorch-triton-rocm",
        "pytorch-triton-xpu",
        "intel-extension-for-pytorch",
        "torch-npu",
    }
)
BACKEND_PREFIXES = ("nvidia-", "cuda-", "rocm", "amd-", "neuron", "torch-neuron", "oneccl")


def is_backend(name: str) -> bool:
    return name in BACKEND or name.startswith(BACKEND_PREFIXES)


def order(name: str) -> tuple[int, str]:
    """torch, then the backend packages, then the rest, each alphabetically."""
    return (0 if name == "torch" else 1 if is_backend(name) else 2, name)


def _change(a: Package | None, b: Package | None) -> PackageChange:
    if a is None:
        return "added"
    if b is None:
        return "removed"
    return "version" if a.version != b.version else "origin"


def _listed(freeze: PipFreeze) -> dict[str, Package] | None:
    return None if freeze.installed is None else {p.name: p for p in freeze.installed}


def package_differences(a: PipFreeze, b: PipFreeze) -> tuple[PackageDifference, ...] | None:
    """Every package that differs, in ``order``; None where a side has no list. A list cut
    at its bound is compared up to its last name only (beyond it nothing is known)."""
    listed_a, listed_b = _listed(a), _listed(b)
    if listed_a is None or listed_b is None:
        return None
    ends = [max(m, default="") for m, f in ((listed_a, a), (listed_b, b)) if f.truncated]
    last = min(ends) if ends else None
    rows = [
        PackageDifference(
            name=name,
            change=_change(listed_a.get(name), listed_b.get(name)),
            baseline=listed_a.get(name),
            target=listed_b.get(name),
            backend=is_backend(name),
        )
        for name in listed_a.keys() | listed_b.keys()
        if listed_a.get(name) != listed_b.get(name) and (last is None or name <= last)
    ]
    return tuple(sorted(rows, key=lambda d: order(d.name)))


def _versions(env: Environment | None) -> tuple[Mapping[str, str], bool]:
    """The versions a manifest names, and whether that is every installed package."""
    if env is None:
        return {}, False
    listed = _listed(env.pip_freeze)
    if listed is not None:
        return {name: p.version for name, p in listed.items()}, not env.pip_freeze.truncated
    known = {normalise(k): v for k, v in env.device.backend_packages.items() if v is not None}
    return {**known, "torch": env.torch.version}, False


def _status(admits: bool | None, complete: bool) -> PinStatus:
    if admits is None:
        return "missing" if complete else "unknown"
    return "ok" if admits else "drift"


def check_pins(
    pins: Mapping[str, str], env_a: Environment | None, env_b: Environment | None
) -> Pins | None:
    """Each pinned package on each side (None without pins)."""
    if not pins:
        return None
    (have_a, all_a), (have_b, all_b) = _versions(env_a), _versions(env_b)
    checks = []
    for package in sorted(pins, key=order):
        pin = parse_pin(package, pins[package], f"pin {package}")
        x, y = have_a.get(pin.package), have_b.get(pin.package)
        checks.append(
            PinCheck(
                package=pin.package,
                pin=pin.text,
                baseline=x,
                target=y,
                baseline_status=_status(None if x is None else pin.admits(x), all_a),
                target_status=_status(None if y is None else pin.admits(y), all_b),
            )
        )
    return Pins(checks=tuple(checks), drifted=tuple(c.package for c in checks if c.drifted))
