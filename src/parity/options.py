"""One option value at a time: every number in its declared range and finite, prices,
batch sizes, durations, lists of strings and paths, each checked for its type and value
(``OptionError`` naming the option and the fix).

``parity.request`` builds its requests of these; they are apart so that each surface
(the command line, plan files, Python keyword arguments, a stored ``request.json``)
shares one definition of what a value may be. Nothing here imports torch.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from parity.errors import OptionError
from parity.model.verdict import Price
from parity.model.workload import FingerprintParts
from parity.versions import parse_pin, split_requirement

DAY_S = 86400.0
#: the declared upper bound of every numeric option (the lower bounds are where each is
#: read): beyond these a value is a typo, or would overflow what it feeds (a seed is 64
#: bits, a timeout a timer); plan files and the Python API share them
HIGH: dict[str, float] = {
    "--batch-size": 2**20,
    "--batch-sizes": 2**20,
    "--seq-len": 2**20,
    "--steps": 10**7,
    "--seed": 2**63 - 1,
    "--repeats": 1000,
    "--nproc": 4096,
    "--nnodes": 4096,
    "--scaling process counts": 4096,
    "--timeout": 30 * DAY_S,
    "--budget": 30 * DAY_S,
    "--duration": 30 * DAY_S,
    "--target-loss": 1e30,
    "--price": 1e7,
    "--price accelerators": 4096,
    "--k": 10**7,
    "--m": 10**7,
    "--max-drift": 1e6,
    "--max-host-growth": 1e9,
    "--max-device-growth": 1e9,
    "--limit": 10**6,
    "cost.run_steps": 10**12,
    "cost.engineering_hours": 1e7,
    "cost.engineering_rate": 1e6,
    "cost.retry_fraction": 100,
    "cost.checkpoint_overhead": 100,
}


def check_number(
    name: str,
    value: object,
    *,
    integer: bool = False,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """``value`` as a finite number in range (``high`` defaults to ``HIGH[name]``), or
    OptionError naming ``name``."""
    high = HIGH.get(name) if high is None else high
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


def whole_numbers(option: str, text: str, example: str) -> list[int]:
    """``1,8,32`` into whole numbers (ASCII digits only), each checked against its range."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not all(x.isascii() and x.isdigit() and len(x) <= 30 for x in items):
        raise OptionError(f"{option} {show(text)} must be whole numbers, e.g. {example}")
    return [int(check_number(option, int(x), integer=True, low=1)) for x in items]


def parse_price(text: str) -> tuple[str, Price]:
    """``SIDE=DOLLARS_PER_HOUR[:ACCELERATORS]`` with SIDE baseline or target."""
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
    check_number("--price", usd, low=0, low_open=True)
    check_number("--price accelerators", count, integer=True, low=1)
    return side, Price(usd_per_hour=usd, accelerators=count)


def parse_batch_sizes(text: str | Sequence[int]) -> tuple[int, ...]:
    """``1,8,32`` (or a list) into sorted distinct batch sizes of at least 1."""
    if isinstance(text, str):
        values: Sequence[object] = whole_numbers("--batch-sizes", text, "1,8,32")
    elif isinstance(text, Sequence):
        values = list(text)
    else:
        raise OptionError(f"batch_sizes must be a list of whole numbers, got {show(text)}")
    sizes = sorted({int(check_number("--batch-sizes", v, integer=True, low=1)) for v in values})
    if not sizes:
        raise OptionError("--batch-sizes needs at least one batch size, e.g. 1,8,32")
    return tuple(sizes)


def allowed_differences(items: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """``FIELD`` or ``FIELD=reason`` items (or a mapping) into field -> reason."""
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
    if isinstance(value, Mapping):
        out: dict[str, Price] = {}
        for role, price in value.items():
            if isinstance(price, Price):
                out[str(role)] = price
            else:
                out.update([parse_price(f"{role}={price}")])
        return out
    return dict(parse_price(p) for p in strings("prices", value))


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([hms])", re.ASCII)
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
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
                f"--duration {show(text)} is not a duration: use e.g. 30s, 10m, 1h or 1h30m"
            ) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise OptionError(f"--duration {show(text)} must be more than zero, e.g. 30s")
    return check_number("--duration", seconds, low=0, low_open=True)


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
    if parts.username is not None or parts.password is not None:
        raise OptionError(
            "--mlflow: credentials in the tracking URI would be written into request.json: "
            "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD instead"
        )
    return uri


def optional_int(name: str, value: object, low: int = 1) -> int | None:
    return None if value is None else int(check_number(name, value, integer=True, low=low))


def typed_options(given: dict[str, Any]) -> dict[str, Any]:
    """``CompareOptions`` keyword arguments checked for their type (their values are the
    request's to check), strings, lists, prices and paths normalised."""
    if isinstance(given.get("data"), os.PathLike):
        given["data"] = os.fspath(given["data"])
    text_keys = (
        *("workload", "size", "baseline", "target", "rdzv_endpoint", "task", "data"),
        "generate_loop",
    )
    for key in (*text_keys, "mlflow_experiment", "tuning_intended"):
        if key in given and not isinstance(given[key], str):
            raise OptionError(f"{key} must be a string, got {show(given[key])}")
    if "out" in given:
        given["out"] = check_path("out", given["out"])
    if "script" in given:
        given["script"] = script_argv(given["script"])
    if "hf_config" in given:
        given["hf_config"] = strings("hf_config", given["hf_config"])
    if "checks" in given:  # directories, also comma-separated
        items = strings("checks", given["checks"])
        given["checks"] = tuple(p.strip() for i in items for p in i.split(",") if p.strip())
    if "prices" in given:
        given["prices"] = prices(given["prices"])
    if "pins" in given:
        given["pins"] = pins(given["pins"])
    for key in ("cost", "operational"):
        if key in given and not isinstance(given[key], Mapping):
            raise OptionError(f"{key} must be a mapping of names to values, got {show(given[key])}")
    if "compliance" in given:
        flag("compliance", given["compliance"])
    if given.get("mlflow") is True:  # parity.compare(..., mlflow=True): MLflow's default
        given["mlflow"] = ""
    if "mlflow" in given:
        given["mlflow"] = parse_tracking_uri(given["mlflow"])
    return given


def default_target() -> str:
    """The accelerator PyTorch reports, or ``cpu+bf16`` on a machine without one (or with
    one parity has no adapter for: a device a plugin registered in this process only)."""
    import torch

    from parity.devices.names import check_device_name
    from parity.errors import SpecError

    accel = getattr(torch, "accelerator", None)
    if accel is not None and accel.is_available():
        current = accel.current_accelerator()
        if current is not None and current.type != "cpu":
            try:
                check_device_name(current.type, current.type)
            except SpecError:
                return "cpu+bf16"
            return str(current.type)
    return "cpu+bf16"


# -- the options as given ---------------------------------------------------------------------

COST_KNOBS = (
    "run_steps",
    "engineering_hours",
    "engineering_rate",
    "idle_fraction",
    "retry_fraction",
    "checkpoint_overhead",
)


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    """The options of a comparison as given, before validation (None: not given)."""

    workload: str | None = None
    script: tuple[str, ...] = ()
    size: str | None = None
    batch_size: object = None
    seq_len: object = None
    steps: object = None
    seed: object = None
    hf_config: tuple[str, ...] = ()
    task: str | None = None
    data: str | None = None
    generate_loop: str | None = None
    baseline: str | None = None
    target: str | None = None
    out: str | None = None
    repeats: object = None
    precision: object = None
    budget_s: object = None
    compliance: bool | None = None
    timeout_s: object = None
    nproc: object = None
    nnodes: object = None
    rdzv_endpoint: str | None = None
    allow_diff: Mapping[str, str] | Sequence[str] | None = None
    target_loss: object = None
    #: the agreement gates' thresholds: embeddings' smallest per-row cosine similarity and
    #: logits' smallest top-1 agreement with the baseline (None: the defaults, 0.99)
    min_cosine: object = None
    min_top1: object = None
    prices: Mapping[str, Price] = field(default_factory=dict)
    cost: Mapping[str, object] = field(default_factory=dict)
    operational: Mapping[str, str] = field(default_factory=dict)
    checks: tuple[str, ...] = ()
    batch_sizes: str | Sequence[int] | None = None
    #: package name -> expected version (``==2.13.*``); the plan's ``[stack]`` table
    pins: Mapping[str, str] = field(default_factory=dict)
    mlflow: str | None = None
    mlflow_experiment: str | None = None
    #: the fair-comparison rules (``parity.fair_options``): the production shape
    #: (``KEY=VALUE`` items or a mapping), latency limits, why a tuning asymmetry is meant
    production: Mapping[str, object] | Sequence[str] | None = None
    slo: Mapping[str, object] | Sequence[str] | str | None = None
    tuning_intended: str | None = None

    def merged(self, over: CompareOptions) -> CompareOptions:
        """These options with every option ``over`` gives replacing them."""
        defaults = CompareOptions()
        changes = {
            f.name: getattr(over, f.name)
            for f in fields(self)
            if getattr(over, f.name) != getattr(defaults, f.name)
        }
        for key in ("prices", "pins"):  # merged, name by name
            if key in changes:
                changes[key] = {**getattr(self, key), **getattr(over, key)}
        return replace(self, **changes)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> CompareOptions:
        """Options from keyword arguments (the Python API's, the command line's), of any
        type: each is checked for its type here, and for its value by the request."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise OptionError(
                f"unknown argument {show(unknown[0])}: use one of {', '.join(sorted(names))}"
            )
        given = typed_options({k: v for k, v in kwargs.items() if v is not None})
        return cls(**given)
