"""The fair-comparison rules' options, read once for every input surface: the production
shape (``--production KEY=VALUE``, a plan's ``[production]`` table, ``production=``) and
the latency limits (``--slo ttft_p99=200ms,e2e_p99=2s``, ``[slo]``, ``slo=``).

Each bad value is an ``OptionError`` naming the option and the fix. Nothing here imports
torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from parity.errors import OptionError
from parity.model.fair import (
    LATENCY_METRICS,
    OPTIMIZER_STATE_BYTES,
    LatencyLimit,
    ProductionShape,
)
from parity.model.spec import PRECISIONS
from parity.request.values import check_number, show, strings

SIZES = ("parameters", "seq_len", "batch_size", "max_new_tokens")
PRODUCTION_KEYS = (*SIZES, "precision", "optimizer", "data_pipeline")
#: the most a production size may be (a parameter count beyond 1e15 is a typo)
HIGH = 1e15
_COUNT = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)([kmbt]?)", re.ASCII | re.IGNORECASE)
_SCALE = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
_TIME = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)(us|ms|s)?", re.ASCII | re.IGNORECASE)
_UNIT_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}
#: another name for step latency (inference)
ALIASES = {"step": "latency"}


def _count(key: str, value: object) -> int:
    """``1.3B``, ``350M``, ``7e9`` or a whole number."""
    if isinstance(value, str):
        match = _COUNT.fullmatch(value.strip())
        if match is None:
            raise OptionError(
                f"--production {key}={show(value)} must be a count, e.g. {key}=1.3B or 2048"
            )
        value = float(match[1]) * _SCALE[match[2].lower()]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
    number = check_number(f"--production {key}", value, low=1, high=HIGH)
    if not float(number).is_integer():
        raise OptionError(f"--production {key} must be a whole number, got {show(value)}")
    return int(number)


def _pairs(value: object) -> list[tuple[str, object]]:
    if isinstance(value, Mapping):
        return [(str(k), v) for k, v in value.items()]
    pairs: list[tuple[str, object]] = []
    for item in strings("--production", value):
        key, sep, text = item.partition("=")
        if not sep:
            raise OptionError(f"--production {show(item)} must be KEY=VALUE, e.g. parameters=1.3B")
        pairs.append((key.strip(), text.strip()))
    return pairs


def parse_production(value: object) -> ProductionShape | None:
    """The production shape from ``KEY=VALUE`` items or a mapping (None: none given)."""
    pairs = _pairs(value)
    if not pairs:
        return None
    given: dict[str, Any] = {}
    for key, item in pairs:
        if key not in PRODUCTION_KEYS:
            raise OptionError(
                f"--production {show(key)} is not a production key: use one of "
                f"{', '.join(PRODUCTION_KEYS)}"
            )
        if key in SIZES:
            given[key] = _count(key, item)
            continue
        text = item.strip().lower() if isinstance(item, str) else None
        if not text:
            raise OptionError(f"--production {key} must be a word, got {show(item)}")
        if key == "precision" and text not in PRECISIONS:
            raise OptionError(f"--production precision={text}: use one of {', '.join(PRECISIONS)}")
        if key == "optimizer" and text not in OPTIMIZER_STATE_BYTES:
            raise OptionError(
                f"--production optimizer={text}: use one of {', '.join(OPTIMIZER_STATE_BYTES)}"
            )
        given[key] = text if key != "data_pipeline" else str(item).strip()
    return ProductionShape(**given)


def _seconds(name: str, value: object) -> float:
    if isinstance(value, str):
        match = _TIME.fullmatch(value.strip())
        if match is None:
            raise OptionError(f"--slo {name}={show(value)} must be a time, e.g. 200ms, 2s, 500us")
        value = float(match[1]) * _UNIT_S[match[2].lower() if match[2] else None]
    return float(check_number(f"--slo {name}", value, low=0, low_open=True, high=86400))


def _limit(name: str, value: object) -> LatencyLimit:
    metric, sep, pct = name.strip().lower().rpartition("_p")
    metric = ALIASES.get(metric, metric)
    if not sep or metric not in LATENCY_METRICS or pct not in ("50", "90", "99"):
        raise OptionError(
            f"--slo {show(name)} is not a limit: write METRIC_pNN=TIME with METRIC one of "
            f"{', '.join(LATENCY_METRICS)} (step = latency) and NN 50, 90 or 99, "
            "e.g. ttft_p99=200ms"
        )
    for known in LATENCY_METRICS:
        if known == metric:
            return LatencyLimit(metric=known, percentile=int(pct), limit_s=_seconds(name, value))
    raise AssertionError(metric)  # pragma: no cover - checked above


def parse_slo(value: object) -> tuple[LatencyLimit, ...]:
    """Limits from ``ttft_p99=200ms,e2e_p99=2s`` strings (repeatable) or a mapping."""
    if isinstance(value, Mapping):
        pairs = [(str(k), v) for k, v in value.items()]
    else:
        pairs = []
        for item in strings("--slo", value):
            for part in (p.strip() for p in item.split(",") if p.strip()):
                name, sep, text = part.partition("=")
                if not sep:
                    raise OptionError(f"--slo {show(part)} must be NAME=TIME, e.g. ttft_p99=200ms")
                pairs.append((name, text))
    limits = tuple(_limit(name, text) for name, text in pairs)
    names = [x.name for x in limits]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise OptionError(f"--slo {twice[0]} is given twice: give each limit once")
    return limits
