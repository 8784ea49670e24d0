"""How a figure is written, once for every report: seconds, bytes, rates, money, errors,
percentiles with their sample counts, and the one vocabulary of result words.

Every renderer shows the strings made here; none formats a number itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from parity.model.metrics import Flops, Percentiles

#: the result words of every report: a gate passed or failed, a gate with too little
#: evidence for either (never a pass), a figure reported but not gated, or a verdict not
#: given because an earlier gate failed
Result = Literal["PASS", "FAIL", "NOT DECIDED", "INFO", "WITHHELD", "ERROR"]
RESULTS: tuple[Result, ...] = ("PASS", "FAIL", "NOT DECIDED", "INFO", "WITHHELD", "ERROR")
#: a p99 over fewer samples than this is little more than the largest value
P99_MIN_SAMPLES = 100
P99_MARK = "*"
P99_LEGEND = f"{P99_MARK} p99 over fewer than {P99_MIN_SAMPLES} samples: close to the maximum"
DASH = "-"


def result_of(passed: bool | None, *, gated: bool = True) -> Result:
    """PASS or FAIL for a gate; INFO for a figure that is reported but not gated."""
    if not gated or passed is None:
        return "INFO"
    return "PASS" if passed else "FAIL"


def seconds(value: float | None) -> str:
    if value is None:
        return DASH
    if value == 0:
        return "0 s"
    if abs(value) >= 1:
        return f"{value:.2f} s"
    if abs(value) >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


def nbytes(value: float | None) -> str:
    if value is None:
        return DASH
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop returns at GiB


def rate(value: float | None, unit: str) -> str:
    return DASH if value is None else f"{value:,.1f} {unit}/s"


def flops(value: float | None) -> str:
    return DASH if value is None else f"{value / 1e9:,.1f} GFLOP/s"


def flop_count(f: Flops | None) -> str:
    """FLOPs per step and the method that counted them, or that there is no count."""
    if f is None:
        return DASH
    if f.per_step is None:
        return "not counted" if f.error else DASH
    method = f" ({f.method_name})" if f.method_name else ""
    return f"{f.per_step / 1e9:,.3g} GFLOP{method}"


def usd(value: float | None) -> str:
    if value is None:
        return DASH
    return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"


def sci(value: float | None) -> str:
    """An error or a small difference: two significant digits, scientific."""
    if value is None:
        return DASH
    return "0" if value == 0 else f"{value:.2e}"


def share(value: float | None) -> str:
    return DASH if value is None else f"{value:.0%}"


def ratio(value: float | None) -> str:
    return DASH if value is None else f"{value:.3f}"


def times(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}x"


def tolerance(value: float | None) -> str:
    return DASH if value is None else f"{value:.0e}"


def number(value: float | int | str | None) -> str:
    if value is None:
        return DASH
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def percentiles(p: Percentiles | None, unit: Callable[[float | None], str] = seconds) -> str:
    """``p50 / p90 / p99`` with the p99 marked where it rests on too few samples."""
    if p is None:
        return DASH
    p99 = unit(p.p99)
    if p.p99 is not None and p.n < P99_MIN_SAMPLES:
        p99 += P99_MARK
    return f"{unit(p.p50)} / {unit(p.p90)} / {p99}"


def per_second(value: float | None) -> str:
    """A rate whose unit the row's label names (tokens/s percentiles)."""
    return DASH if value is None else f"{value:,.1f}/s"
