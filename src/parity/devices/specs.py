"""Device figures from ``specs.toml`` (peak FLOP/s, memory, prices), keyed by exact name.

One rule finds a device's entry, whatever the device (:class:`DeviceKey`): the names it
reported, most specific first, each matched exactly against an entry's ``names``: the
name in its properties (``get_device_properties(i).name``: the instance type, ``trn2``,
on TorchNeuron, whose ``get_device_name`` says only ``neuron:0``), then its device name
(``NVIDIA H200`` on CUDA and ROCm). Where a device's entries differ by logical-core
setting (``NEURON_LOGICAL_NC_CONFIG``), the one for the setting the run recorded applies,
the ``default_lnc`` one where it was unset. No substring matching: an unknown device
reports achieved FLOP/s instead of a guessed MFU. Peaks are per framework device (what
one ``torch.device`` index drives: a GPU, a logical NeuronCore), and every entry says
which unit that is (:func:`framework_unit`). ``PARITY_SPECS`` names a user TOML file of
the same shape whose entries win.
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
from parity.model.manifest import DeviceInfo
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
    #: the NEURON_LOGICAL_NC_CONFIG this entry applies at (None: any), and whether it is
    #: the one that applies where the variable is unset
    logical_nc_config: int | None = None
    default_lnc: bool = False
    #: the entry whose prices apply (the same instances at another logical-core setting)
    priced_as: str | None = None

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
                logical_nc_config=None
                if entry.get("logical_nc_config") is None
                else int(_number(entry.get("logical_nc_config"))),
                default_lnc=bool(entry.get("default_lnc", False)),
                priced_as=_text(entry.get("priced_as")),
            )
        except (TypeError, ValueError) as exc:
            raise UsageError(f"device spec {label!r} in {where} is malformed: {exc}") from None


PRICINGS = ("on-demand", "capacity-block")


@dataclass(frozen=True, kw_only=True, slots=True)
class PriceEntry:
    """One ``[prices.LABEL]`` entry: an instance of a device at one purchase option.

    ``chips`` is the accelerator chips of the instance (its framework devices are chips
    times the device entry's ``units_per_chip``); ``accelerators``, the older form, gives
    the framework devices directly. ``confirmed`` is False for a figure not read from the
    provider's own price page."""

    label: str
    device: str
    usd_per_hour: float
    chips: int | None = None
    accelerators: int | None = None
    instance: str | None = None
    pricing: str = "on-demand"
    region: str | None = None
    confirmed: bool = True
    source: str | None = None
    source_url: str | None = None
    date: str | None = None

    @classmethod
    def of(cls, label: str, entry: Mapping[str, object], where: str) -> PriceEntry:
        try:
            found = cls(
                label=label,
                device=str(entry["device"]),
                usd_per_hour=_number(entry["usd_per_hour"]),
                chips=_whole(entry.get("chips")),
                accelerators=_whole(entry.get("accelerators")),
                instance=_text(entry.get("instance")),
                pricing=str(entry.get("pricing", "on-demand")),
                region=_text(entry.get("region")),
                confirmed=bool(entry.get("confirmed", True)),
                source=_text(entry.get("source")),
                source_url=_text(entry.get("source_url")),
                date=_text(entry.get("date")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"price {label!r} in {where} is malformed: {exc}") from None
        if (found.chips is None) == (found.accelerators is None):
            raise UsageError(
                f"price {label!r} in {where} must give `chips` (accelerator chips in the "
                "instance) or `accelerators` (framework devices in it), not both or neither"
            )
        if found.pricing not in PRICINGS:
            raise UsageError(
                f"price {label!r} in {where}: pricing {found.pricing!r} is unknown: use one "
                f"of {', '.join(PRICINGS)}"
            )
        return found

    def framework_devices(self, entry: DeviceEntry) -> int:
        """How many framework devices of ``entry`` the instance holds (its price is
        shared by them): chips x units per chip at the entry's logical-core setting."""
        if self.accelerators is not None:
            return self.accelerators
        assert self.chips is not None  # checked in ``of``
        return self.chips * entry.units_per_chip


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    return float(value)


def _whole(value: object) -> int | None:
    return None if value is None else int(_number(value))


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


@dataclass(frozen=True, kw_only=True, slots=True)
class DeviceKey:
    """What a device reported that names it in the spec table: its names, most specific
    first, and the logical-core setting it ran at (None: not set, the default)."""

    names: tuple[str, ...]
    logical_nc_config: int | None = None

    @classmethod
    def of(cls, info: DeviceInfo) -> DeviceKey:
        """The key of a device as a manifest recorded it: the name in its properties
        (``model``), then its device name."""
        names = tuple(dict.fromkeys(n for n in (info.model, info.name) if n))
        return cls(names=names, logical_nc_config=info.logical_nc_config)


Key = DeviceKey | str


def _key(key: Key) -> DeviceKey:
    return key if isinstance(key, DeviceKey) else DeviceKey(names=(key,))


def lookup(key: Key) -> DeviceEntry | None:
    """The spec entry for a device: the first of its names that an entry lists exactly;
    of the entries listing it, the one for its logical-core setting (None when none is:
    no figure rather than one for another setting)."""
    key = _key(key)
    entries = list(load_specs().values())
    for name in key.names:
        listing = [e for e in entries if name in e.names]
        if listing:
            return _for_setting(listing, key.logical_nc_config)
    return None


def _for_setting(entries: list[DeviceEntry], lnc: int | None) -> DeviceEntry | None:
    """The entry that applies at logical-core setting ``lnc`` (None: unset)."""
    if all(e.logical_nc_config is None for e in entries):
        return entries[0]
    if lnc is None:
        found = [e for e in entries if e.default_lnc or e.logical_nc_config is None]
    else:
        found = [e for e in entries if e.logical_nc_config in (lnc, None)]
    return found[0] if found else None


@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkUnit:
    """What one framework device is on an accelerator, and how many a chip holds."""

    label: str
    unit: str
    units_per_chip: int


def framework_unit(key: Key) -> FrameworkUnit | None:
    """The framework device of the spec entry for this device, if any."""
    entry = lookup(key)
    if entry is None:
        return None
    return FrameworkUnit(label=entry.label, unit=entry.unit, units_per_chip=entry.units_per_chip)


def peak_flops(key: Key, dtype: str) -> Peak | None:
    """Peak FLOP/s of one framework device for one format (fp32, tf32, bf16, fp16), with the
    unit it is per and the source."""
    entry = lookup(key)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class FoundPrice:
    """A price from the table for a device: the entry, and the framework devices of that
    device (at its logical-core setting) that share the instance's price."""

    entry: PriceEntry
    framework_devices: int

    def source_text(self) -> str:
        """Where the figure comes from, as a verdict shows it (the entry in specs.toml
        says more): the purchase option, instance, region and date read, and UNCONFIRMED
        for a figure not read from the provider's own price page."""
        e = self.entry
        where = ", ".join(x for x in (e.pricing, e.instance or e.label, e.region) if x)
        text = f"specs.toml {where}, read {e.date or 'on an unknown date'}"
        return text if e.confirmed else f"{text}, UNCONFIRMED (a third-party figure)"


def price_for(key: Key) -> FoundPrice | None:
    """The price the table gives for a device: its first confirmed on-demand entry, else
    its first confirmed one, else its first (an unconfirmed figure says so)."""
    entry = lookup(key)
    if entry is None:
        return None
    priced = entry.priced_as or entry.label
    mine = [p for p in load_prices().values() if p.device == priced]
    order = sorted(mine, key=lambda p: (not p.confirmed, p.pricing != "on-demand"))
    if not order:
        return None
    return FoundPrice(entry=order[0], framework_devices=order[0].framework_devices(entry))


def device_memory(key: Key) -> tuple[int, str] | None:
    """Memory of one framework device of this device, and its source (specs.toml)."""
    entry = lookup(key)
    if entry is None or entry.memory_bytes is None:
        return None
    return entry.memory_bytes, f"devices/specs.toml: {entry.memory_source or entry.label}"
