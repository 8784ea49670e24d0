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
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from parity.errors import UsageError
from parity.model.metrics import Peak

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True, kw_only=True, slots=True)
class DeviceEntry:
    """One ``[devices.LABEL]`` entry: the names the device reports, what one framework
    device is on it, and its peaks per dtype with their source."""

    label: str
    names: tuple[str, ...]
    unit: str
    units_per_chip: int = 1
    #: peak FLOP/s of one framework device, per dtype (what MFU uses)
    peak_flops: Mapping[str, float] = field(default_factory=dict)
    #: the published per-chip figure (peak_flops x units_per_chip)
    chip_peak_flops: Mapping[str, float] = field(default_factory=dict)
    source: str | None = None
    source_url: str | None = None
    date: str | None = None
    #: memory of one framework device, and where the figure comes from
    memory_bytes: int | None = None
    memory_source: str | None = None

    @classmethod
    def of(cls, label: str, entry: Mapping[str, object], where: str) -> DeviceEntry:
        unit = entry.get("unit")
        if not isinstance(unit, str) or not unit:
            raise UsageError(
                f"device spec {label!r} has no `unit`: say what one framework device is on it "
                f'(unit = "GPU", or "logical NeuronCore (LNC=2)") in {where}'
            )
        try:
            return cls(
                label=label,
                names=tuple(str(n) for n in _seq(entry.get("names"))),
                unit=unit,
                units_per_chip=int(_number(entry.get("units_per_chip", 1))),
                peak_flops=_figures(entry.get("peak_flops")),
                chip_peak_flops=_figures(entry.get("chip_peak_flops")),
                source=_text(entry.get("source")),
                source_url=_text(entry.get("source_url")),
                date=_text(entry.get("date")),
                memory_bytes=None
                if entry.get("memory_bytes") is None
                else int(_number(entry.get("memory_bytes"))),
                memory_source=_text(entry.get("memory_source")),
            )
        except (TypeError, ValueError) as exc:
            raise UsageError(f"device spec {label!r} in {where} is malformed: {exc}") from None


@dataclass(frozen=True, kw_only=True, slots=True)
class PriceEntry:
    """One ``[prices.LABEL]`` entry: an instance of a device, on demand."""

    label: str
    device: str
    usd_per_hour: float
    accelerators: int
    instance: str | None = None
    source: str | None = None
    source_url: str | None = None
    date: str | None = None

    @classmethod
    def of(cls, label: str, entry: Mapping[str, object], where: str) -> PriceEntry:
        try:
            return cls(
                label=label,
                device=str(entry["device"]),
                usd_per_hour=_number(entry["usd_per_hour"]),
                accelerators=int(_number(entry["accelerators"])),
                instance=_text(entry.get("instance")),
                source=_text(entry.get("source")),
                source_url=_text(entry.get("source_url")),
                date=_text(entry.get("date")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"price {label!r} in {where} is malformed: {exc}") from None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    return float(value)


def _seq(value: object) -> list[object]:
    if not isinstance(value, list):
        raise TypeError(f"names must be a list, got {value!r}")
    return value


def _figures(value: object) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"peak figures must be a table of dtype = FLOP/s, got {value!r}")
    return {str(k): _number(v) for k, v in value.items()}


def _tables(section: str) -> list[tuple[str, str, Mapping[str, object]]]:
    """``(label, where, entry)`` of a section of the shipped ``specs.toml``, then of the
    user's ``PARITY_SPECS`` file (whose entries win)."""
    text = resources.files("parity.devices").joinpath("specs.toml").read_text()
    found = [(k, "specs.toml", v) for k, v in tomllib.loads(text).get(section, {}).items()]
    user = os.environ.get("PARITY_SPECS")
    if user:
        try:
            extra = tomllib.loads(Path(user).read_text()).get(section, {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"PARITY_SPECS={user} is not a readable TOML file: {exc}") from exc
        found += [(k, user, v) for k, v in extra.items()]
    for label, where, entry in found:
        if not isinstance(entry, Mapping):
            raise UsageError(f"{section}.{label} in {where} must be a table")
    return found


@cache
def load_specs() -> dict[str, DeviceEntry]:
    """Every device entry by label (the user's win)."""
    return {label: DeviceEntry.of(label, e, where) for label, where, e in _tables("devices")}


def lookup(device_name: str) -> DeviceEntry | None:
    """The spec entry whose ``names`` lists this exact device name."""
    for entry in load_specs().values():
        if device_name in entry.names:
            return entry
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkUnit:
    """What one framework device is on an accelerator, and how many a chip holds."""

    label: str
    unit: str
    units_per_chip: int


def framework_unit(device_name: str) -> FrameworkUnit | None:
    """The framework device of the spec entry listing this exact name, if any."""
    entry = lookup(device_name)
    if entry is None:
        return None
    return FrameworkUnit(label=entry.label, unit=entry.unit, units_per_chip=entry.units_per_chip)


def peak_flops(device_name: str, dtype: str) -> Peak | None:
    """Peak FLOP/s of one framework device for one format (fp32, tf32, bf16, fp16), with the
    unit it is per and the source."""
    entry = lookup(device_name)
    if entry is None or dtype not in entry.peak_flops:
        return None
    return Peak(
        device=entry.label,
        dtype=dtype,
        flops=entry.peak_flops[dtype],
        unit=entry.unit,
        source=entry.source,
        source_url=entry.source_url,
        date=entry.date,
    )


@cache
def load_prices() -> dict[str, PriceEntry]:
    """Every price entry by label (the user's win)."""
    return {label: PriceEntry.of(label, e, where) for label, where, e in _tables("prices")}


def price_for(device_name: str) -> PriceEntry | None:
    """The first price entry for the device that reports this exact name."""
    entry = lookup(device_name)
    if entry is None:
        return None
    return next((p for p in load_prices().values() if p.device == entry.label), None)


def device_memory(device_name: str) -> tuple[int, str] | None:
    """Memory of one framework device of this exact name, and its source (specs.toml)."""
    entry = lookup(device_name)
    if entry is None or entry.memory_bytes is None:
        return None
    return entry.memory_bytes, f"devices/specs.toml: {entry.memory_source or entry.label}"
