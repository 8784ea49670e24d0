"""Device figures from ``specs.toml`` (peak FLOP/s, prices), keyed by exact device name.

No substring matching: a device gets a peak figure only when the name it reports is
listed exactly, so an unknown device reports achieved FLOP/s instead of a guessed MFU.
Peaks are per framework device (what one ``torch.device`` index drives: a GPU, a logical
NeuronCore), and every entry says which unit that is (:func:`framework_unit`), so an MFU
figure always names what it is per. ``PARITY_SPECS`` names a user TOML file of the same
shape whose entries win.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from parity.errors import UsageError
from parity.model.metrics import Peak

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@cache
def load_specs() -> dict[str, dict[str, Any]]:
    text = resources.files("parity.devices").joinpath("specs.toml").read_text()
    devices: dict[str, dict[str, Any]] = dict(tomllib.loads(text).get("devices", {}))
    user = os.environ.get("PARITY_SPECS")
    if user:
        path = Path(user)
        try:
            extra = tomllib.loads(path.read_text()).get("devices", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"PARITY_SPECS={user} is not a readable TOML file: {exc}") from exc
        devices.update(extra)
    for label, entry in devices.items():
        if not isinstance(entry.get("unit"), str) or not entry["unit"]:
            raise UsageError(
                f"device spec {label!r} has no `unit`: say what one framework device is on it "
                '(unit = "GPU", or "logical NeuronCore (LNC=2)") in '
                f"{user or 'specs.toml'}"
            )
    return devices


def lookup(device_name: str) -> tuple[str, dict[str, Any]] | None:
    """The spec entry whose ``names`` lists this exact device name."""
    for label, entry in load_specs().items():
        if device_name in entry.get("names", []):
            return label, entry
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkUnit:
    """What one framework device is on an accelerator, and how many a chip holds."""

    label: str
    unit: str
    units_per_chip: int


def framework_unit(device_name: str) -> FrameworkUnit | None:
    """The framework device of the spec entry listing this exact name, if any."""
    found = lookup(device_name)
    if found is None:
        return None
    label, entry = found
    return FrameworkUnit(
        label=label, unit=str(entry["unit"]), units_per_chip=int(entry.get("units_per_chip", 1))
    )


def peak_flops(device_name: str, dtype: str) -> Peak | None:
    """Peak FLOP/s of one framework device for the dtype its matmuls run in, with the
    unit it is per and the source."""
    found = lookup(device_name)
    if found is None:
        return None
    label, entry = found
    value = entry.get("peak_flops", {}).get(dtype)
    if value is None:
        return None
    return Peak(
        device=label,
        dtype=dtype,
        flops=float(value),
        unit=str(entry["unit"]),
        source=entry.get("source"),
        source_url=entry.get("source_url"),
        date=entry.get("date"),
    )


@cache
def load_prices() -> dict[str, dict[str, Any]]:
    text = resources.files("parity.devices").joinpath("specs.toml").read_text()
    prices: dict[str, dict[str, Any]] = dict(tomllib.loads(text).get("prices", {}))
    user = os.environ.get("PARITY_SPECS")
    if user:
        prices.update(tomllib.loads(Path(user).read_text()).get("prices", {}))
    return prices


def price_for(device_name: str) -> dict[str, Any] | None:
    """The first price entry for the device that reports this exact name."""
    found = lookup(device_name)
    if found is None:
        return None
    for entry in load_prices().values():
        if entry.get("device") == found[0]:
            return entry
    return None
