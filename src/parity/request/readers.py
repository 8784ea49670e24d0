"""The readers the option table declares its options with: each reads one value as a
surface gives it (a string from the command line, a number or mapping from a plan file or
a keyword argument, a typed value from a stored request) and checks it, naming the option
as that surface spells it (``parity.request.values`` holds the checks themselves).
Nothing here imports torch or numpy."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from parity.errors import OptionError
from parity.request.values import (
    check_number,
    parse_tracking_uri,
    prices,
    read_side,
    show,
    strings,
    whole_numbers,
)

if TYPE_CHECKING:
    from parity.model.fair import LatencyLimit, ProductionShape
    from parity.model.inputs import CostInputs, Minimum, Price
    from parity.model.spec import SideSpec

T = TypeVar("T")
#: reads one value: (the option as the surface names it, the value given) -> typed value
Reader = Callable[[str, Any], T]


def some(value: Any) -> Any:
    """An empty value stored as not given."""
    return value or None


# -- readers -------------------------------------------------------------------------------


def whole(low: int = 1, high: float = 10**7) -> Reader[int]:
    return lambda name, v: int(check_number(name, v, integer=True, low=low, high=high))


def number(low: float | None = 0, high: float = 1e7, *, open_low: bool = False) -> Reader[float]:
    return lambda name, v: float(check_number(name, v, low=low, high=high, low_open=open_low))


def text(name: str, value: object) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise OptionError(f"{name} must be a string, got {show(value)}")
    return value


def texts(name: str, value: object) -> tuple[str, ...]:
    return strings(name, value)


def comma_texts(name: str, value: object) -> tuple[str, ...]:
    """Strings, each also split at commas (``--checks a,b``)."""
    return tuple(p.strip() for i in strings(name, value) for p in i.split(",") if p.strip())


def mapping(name: str, value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise OptionError(f"{name} must be a mapping of names to values, got {show(value)}")
    return {str(k): str(v) for k, v in value.items()}


def notes(name: str, value: object) -> dict[str, str]:
    """Free-text answers (a plan's ``[operational]``), redacted: they reach request.json,
    inputs.json, the verdict, the reports and the index."""
    from parity.safety.redact import redactor

    r = redactor()
    return {k: r.text(v) for k, v in mapping(name, value).items()}


def note(name: str, value: object) -> str | None:
    """A free-text reason (``--tuning-intended``), redacted as ``notes`` are; None if blank."""
    from parity.safety.redact import redactor

    return redactor().text(text(name, value)).strip() or None


def side(name: str, value: object) -> SideSpec:
    """A side spec string parsed, or a side as typed (a stored request's): its device known."""
    from parity.devices.names import check_device_name
    from parity.model.spec import SideSpec

    if not isinstance(value, SideSpec):
        return read_side(name, value)
    check_device_name(value.device, value.spec)
    return value


def price_table(name: str, value: object) -> dict[str, Price]:
    found = prices(value)
    for role in found:
        if role not in ("baseline", "target"):
            raise OptionError(f"a price for {role!r}: prices are for the baseline or the target")
    return found


COST_HIGH = {
    "run_steps": 1e12,
    "engineering_hours": 1e7,
    "engineering_rate": 1e6,
    "idle_fraction": 0.999,
    "retry_fraction": 100,
    "checkpoint_overhead": 100,
}
COST_KNOBS = tuple(COST_HIGH)


def cost(name: str, value: object) -> CostInputs:
    """The cost settings (``cost.KNOB``), prices aside."""
    from parity.model.inputs import CostInputs

    given = mapping(name, value) if not isinstance(value, Mapping) else value
    unknown = sorted(set(given) - set(COST_HIGH))
    if unknown:
        raise OptionError(
            f"cost.{unknown[0]} is not a cost setting: use one of {', '.join(COST_KNOBS)}"
        )
    knobs: dict[str, Any] = {}
    for key, v in given.items():
        where, high = f"cost.{key}", COST_HIGH[key]
        if key == "run_steps":
            knobs[key] = int(check_number(where, v, integer=True, low=1, high=high))
        else:
            knobs[key] = float(check_number(where, v, low=0, high=high))
    return CostInputs(**knobs)


def cost_knobs(value: CostInputs) -> dict[str, object]:
    """The cost settings a request holds other than their defaults (prices aside)."""
    from parity.model.inputs import CostInputs

    default = CostInputs()
    return {k: getattr(value, k) for k in COST_KNOBS if getattr(value, k) != getattr(default, k)}


def tracking_uri(name: str, value: object) -> str:
    return "" if value is True else parse_tracking_uri(value)


def experiment(name: str, value: object) -> str:
    got = text(name, value).strip()
    if not got or len(got) > 500:
        raise OptionError(f"{name} {show(value)} must be a name of 1 to 500 characters")
    return got


def fraction(name: str, value: object) -> Minimum:
    """An agreement gate's threshold, in (0, 1]: checked by ``Minimum`` itself, once (a
    stored request's typed value is taken as it is)."""
    from parity.model.inputs import Minimum

    try:
        return Minimum.of(name, value)
    except ValueError as exc:
        raise OptionError(str(exc)) from None


def production(name: str, value: object) -> ProductionShape | None:
    from parity.model.fair import ProductionShape
    from parity.request.fair_options import parse_production
    from parity.safety.redact import redactor

    shape = value if isinstance(value, ProductionShape) else parse_production(value)
    if shape is None or shape.data_pipeline is None:
        return shape
    return replace(shape, data_pipeline=redactor().text(shape.data_pipeline))  # free text


def slo(name: str, value: object) -> tuple[LatencyLimit, ...]:
    from parity.model.fair import LatencyLimit
    from parity.request.fair_options import parse_slo

    if isinstance(value, tuple) and all(isinstance(v, LatencyLimit) for v in value):
        return value
    return parse_slo(value)


def counts(name: str, value: object) -> tuple[int, ...]:
    items = whole_numbers(name, text(name, value), "1,2,4", 4096)
    if not items:
        raise OptionError(f"{name} {show(value)} names no process count, e.g. 1,2,4")
    return tuple(sorted(set(items)))
