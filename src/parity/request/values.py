"""One option value at a time: numbers in range and finite, side specs, prices, batch
sizes, durations, pins, lists of strings and paths, each checked for its type and value
(``OptionError`` naming the option as given and the fix).

The option table (``parity.request.options``) declares each option with one of these readers
and its range; every surface (the command line, plan files, Python keyword arguments, a
stored ``request.json``) reads values through it. Nothing here imports torch or numpy.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from parity.errors import OptionError

if TYPE_CHECKING:  # imported where used: the command line reads sides before the rest
    from parity.model.inputs import Price
    from parity.model.spec import SideSpec

DAY_S = 86400.0
MAX_BATCH = 2**20


def check_number(
    name: str,
    value: object,
    *,
    integer: bool = False,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """``value`` as a finite number in range, or OptionError naming ``name``."""
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OptionError(f"{name} must be {kind}, got {show(value)}")
    if integer and not isinstance(value, int):
        raise OptionError(f"{name} must be {kind}, got {show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise OptionError(f"{name} must be a finite number, got {value}")
    if low is not None and (value <= low if low_open else value < low):
        bound = f"more than {number_text(low)}" if low_open else f"at least {number_text(low)}"
        raise OptionError(f"{name} must be {bound}, got {number_text(value)}")
    if high is not None and value > high:
        raise OptionError(f"{name} must be at most {number_text(high)}, got {number_text(value)}")
    if low is None and high is not None and value < -high:  # no lower bound: a magnitude
        raise OptionError(f"{name} must be at least {number_text(-high)}, got {number_text(value)}")
    return value


def number_text(value: float) -> str:
    """A number as people write it: whole numbers in full up to 16 digits."""
    try:
        if float(value).is_integer() and abs(value) < 1e16:
            return str(int(value))
        return f"{value:g}"
    except OverflowError:  # an int beyond any float
        return f"{'-' if value < 0 else ''}a {int(value).bit_length()}-bit number"


def show(value: object) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def whole_numbers(option: str, text: str, example: str, high: float) -> list[int]:
    """``1,8,32`` into whole numbers (ASCII digits only), each in [1, ``high``]."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not all(x.isascii() and x.isdigit() and len(x) <= 30 for x in items):
        raise OptionError(f"{option} {show(text)} must be whole numbers, e.g. {example}")
    return [int(check_number(option, int(x), integer=True, low=1, high=high)) for x in items]


def parse_price(text: str) -> tuple[str, Price]:
    """``SIDE=DOLLARS_PER_HOUR[:ACCELERATORS]`` with SIDE baseline or target."""
    from parity.model.inputs import Price

    side, sep, rest = text.partition("=")
    side = side.strip()
    if not sep or side not in ("baseline", "target"):
        raise OptionError(
            f"--price {show(text)}: write baseline=DOLLARS_PER_HOUR[:ACCELERATORS] or target=..."
        )
    amount, _, accel = rest.partition(":")
    try:
        usd, count = float(amount), int(accel or "1")
    except ValueError:
        raise OptionError(
            f"--price {show(text)}: the price and accelerator count must be numbers, "
            "e.g. target=21.50:16"
        ) from None
    check_price(usd, count)
    return side, Price(usd_per_hour=usd, accelerators=count)


def check_price(usd: float, accelerators: int) -> None:
    check_number("--price", usd, low=0, low_open=True, high=1e7)
    check_number("--price accelerators", accelerators, integer=True, low=1, high=4096)


def parse_batch_sizes(text: str | Sequence[int]) -> tuple[int, ...]:
    """``1,8,32`` (or a list) into sorted distinct batch sizes of at least 1."""
    if isinstance(text, str):
        values: Sequence[object] = whole_numbers("--batch-sizes", text, "1,8,32", MAX_BATCH)
    elif isinstance(text, Sequence):
        values = list(text)
    else:
        raise OptionError(f"batch_sizes must be a list of whole numbers, got {show(text)}")
    sizes = sorted(
        {int(check_number("--batch-sizes", v, integer=True, low=1, high=MAX_BATCH)) for v in values}
    )
    if not sizes:
        raise OptionError("--batch-sizes needs at least one batch size, e.g. 1,8,32")
    return tuple(sizes)


def allowed_differences(items: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """``FIELD`` or ``FIELD=reason`` items (or a mapping) into field -> reason."""
    from parity.model.workload import FingerprintParts

    pairs: list[tuple[str, str]] = []
    if isinstance(items, Mapping):
        pairs = [(str(k), str(v)) for k, v in items.items()]
    elif items is not None:
        for item in strings("allow_diff", items):
            name, _, reason = item.partition("=")
            pairs.append((name, reason))
    allow: dict[str, str] = {}
    for name, reason in pairs:
        name = name.strip()
        if name not in FingerprintParts.names():
            raise OptionError(
                f"--allow-diff {show(name)} is not a fingerprint field: use one of "
                f"{', '.join(FingerprintParts.names())}"
            )
        allow[name] = reason.strip().strip('"') or "allowed by the user (no reason given)"
    return allow


def pins(value: object) -> dict[str, str]:
    """Pinned versions as given: a mapping of package names to pins, or ``NAME PIN``
    items (``torch==2.13.0``, ``numpy>=1.24,<3``: the command line's ``--pin``). Their
    shape is checked here, the pins themselves by ``checked_pins``."""
    from parity.versions import split_requirement

    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for name, pin in value.items():
            if not isinstance(name, str) or not isinstance(pin, str):
                raise OptionError(
                    "pins must map package names to version pins, e.g. {'torch': '==2.13.*'}, "
                    f"got {show(name)}: {show(pin)}"
                )
            out[name] = pin
        return out
    return dict(split_requirement(item) for item in strings("--pin", value))


def checked_pins(given: Mapping[str, str]) -> dict[str, str]:
    """Each pin read (``parity.versions``): normalised name -> the pin as written back."""
    from parity.versions import parse_pin

    out: dict[str, str] = {}
    for name, text in given.items():
        pin = parse_pin(name, text, f"pin {name}")
        out[pin.package] = pin.text
    return out


def strings(name: str, value: object) -> tuple[str, ...]:
    """A string, a list of strings (or paths) or a mapping (``KEY=VALUE``) as strings."""
    if value is None:
        return ()
    if isinstance(value, str | Path):
        return (str(value),)
    if isinstance(value, Mapping):
        return tuple(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in value.items()
        )
    if isinstance(value, Sequence) and all(isinstance(v, str | Path) for v in value):
        return tuple(str(v) for v in value)
    raise OptionError(f"{name} must be a list of strings, got {show(value)}")


def flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OptionError(f"{name} must be True or False, got {show(value)}")
    return value


def check_path(name: str, value: object) -> str:
    if isinstance(value, str | os.PathLike):
        text = os.fspath(value)
        if isinstance(text, str) and text.strip() and "\0" not in text:
            return text
    raise OptionError(f"{name} must be a directory path, got {show(value)}")


def script_argv(value: object) -> tuple[str, ...]:
    """A script's command as a list of strings (``["python", "train.py", ...]``)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise OptionError(
            f"script must be a list of strings such as ['python', 'train.py'], got {show(value)}"
        )
    argv = strings("script", value)
    if not argv:
        raise OptionError("script is empty: give the command, e.g. ['python', 'train.py']")
    return argv


def prices(value: object) -> dict[str, Price]:
    from parity.model.inputs import Price

    if isinstance(value, Mapping):
        out: dict[str, Price] = {}
        for role, price in value.items():
            if isinstance(price, Price):
                check_price(price.usd_per_hour, price.accelerators)
                out[str(role)] = price
            else:
                out.update([parse_price(f"{role}={price}")])
        return out
    return dict(parse_price(p) for p in strings("prices", value))


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([hms])", re.ASCII)
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str, name: str = "--duration") -> float:
    """``30s``, ``10m``, ``1h``, ``1h30m``, ``1.5h`` or plain seconds, in seconds."""
    t = text.strip().lower()
    try:
        seconds = float(t) if t.isascii() else math.nan
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _DURATION.finditer(t):
            if match.start() != pos:
                break
            seconds += float(match[1]) * _UNIT_S[match[2]]
            pos = match.end()
        if pos != len(t) or not t:
            raise OptionError(
                f"{name} {show(text)} is not a duration: use e.g. 30s, 10m, 1h or 1h30m"
            ) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise OptionError(f"{name} {show(text)} must be more than zero, e.g. 30s")
    return check_number(name, seconds, low=0, low_open=True, high=30 * DAY_S)


#: tracking URI schemes MLflow speaks (a local directory is ``file:PATH``)
TRACKING_SCHEMES = ("http", "https", "file", "sqlite", "postgresql", "mysql", "mssql", "databricks")


def parse_tracking_uri(value: object) -> str:
    """``--mlflow``'s URI: empty for MLflow's own default (``MLFLOW_TRACKING_URI``, else
    ``./mlruns``), else a URI with a scheme MLflow speaks and no credentials in it (they
    would be written into ``request.json``)."""
    if not isinstance(value, str) or "\0" in value:
        raise OptionError(f"--mlflow must be a tracking URI string, got {show(value)}")
    uri = value.strip()
    if not uri:
        return ""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(uri)
    except ValueError:
        parts = None
    scheme = parts.scheme.split("+")[0].lower() if parts is not None else ""
    if parts is None or scheme not in TRACKING_SCHEMES:
        raise OptionError(
            f"--mlflow {show(value)} is not a tracking URI: use http(s)://HOST:PORT, "
            "sqlite:///FILE, file:DIR or databricks (or --mlflow alone for MLflow's default)"
        )
    if parts.username is not None or parts.password is not None or parts.query or "#" in uri:
        from parity.safety.urls import safe_form

        raise OptionError(
            f"--mlflow {safe_form(uri)}: a tracking URI with credentials, a query or a "
            "fragment would be written into request.json: give it without and set "
            "MLFLOW_TRACKING_TOKEN (or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD) "
            "instead"
        )
    return uri


def read_side(name: str, value: object) -> SideSpec:
    """A side spec string parsed, its device known (SpecError naming the valid ones)."""
    from parity.devices.names import check_device_name
    from parity.model.spec import parse_side

    if not isinstance(value, str):
        raise OptionError(f"{name} must be a side spec string such as cpu+bf16, got {show(value)}")
    side = parse_side(value)
    check_device_name(side.device, value)
    return side


def default_target() -> str:
    """The accelerator PyTorch reports, or ``cpu+bf16`` on a machine without one (or with
    one parity has no adapter for). Asked in a short-lived subprocess
    (``parity.devices.probe``): this process never starts a device runtime."""
    from parity.devices.names import check_device_name
    from parity.devices.probe import accelerator_type
    from parity.errors import SpecError

    found = accelerator_type()
    if found is None or found == "cpu":
        return "cpu+bf16"
    try:
        check_device_name(found, found)
    except SpecError:
        return "cpu+bf16"
    return found
