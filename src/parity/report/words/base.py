"""The words' common parts: a finding's ``Words``, the figures' readers, the tables every
concern adds its codes to (``WORDS``, ``METHODS``, ``HOWS``) and the lookups every view uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.quality import (
    TRAJECTORY_RULE,
    TrajectoryCheck,
)
from parity.model.verdict import Gate, Sensitivity

Figures = Mapping[str, Json]


Say = Callable[[Figures], str]


@dataclass(frozen=True)
class Words:
    """What a finding says in full, in brief (the summary screen; None: in full), and
    the action that settles it (None: nothing to do)."""

    says: Say
    brief: Say | None = None
    action: Say | None = None


#: every code the judge emits, with its words (each concern's module adds its own)
WORDS: dict[str, Words] = {}
#: how a section was made, by the code the judge gives it
METHODS: dict[str, str] = {}
#: how to check an item not yet proven, by the code the judge gives it
HOWS: dict[str, str] = {}


def _num(f: Figures, key: str) -> float:
    value = f.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def _int(f: Figures, key: str) -> int:
    value = f.get(key)
    return int(value) if isinstance(value, int | float) else 0


def _str(f: Figures, key: str) -> str:
    value = f.get(key)
    return "" if value is None else str(value)


def _verbatim(f: Figures) -> str:
    return _str(f, "text")


def _names(f: Figures, key: str) -> str:
    value = f.get(key)
    return ", ".join(map(str, value)) if isinstance(value, list) else _str(f, key)


def _list(f: Figures, key: str) -> list[str]:
    value = f.get(key)
    return [str(x) for x in value] if isinstance(value, list) else []


def method(code: str) -> str:
    """How a section was made, by its code (an older verdict's sentence as it is)."""
    return METHODS.get(code, code)


class Found(Protocol):
    """A part of the verdict that says what it found by a finding, or (an older verdict's,
    or one not converted) by a sentence."""

    @property
    def finding(self) -> Finding | None: ...

    @property
    def detail(self) -> str | None: ...


def detail(c: Found) -> str | None:
    """What a quality check (or a side's determinism) found: its finding's words, or its
    sentence (None: neither)."""
    return says(c.finding) if c.finding is not None else c.detail


def trajectory_rule(c: TrajectoryCheck) -> str:
    """The loss trajectory's step rule, with its check's figures (an older verdict's
    sentence as it is)."""
    if c.rule != TRAJECTORY_RULE:
        return c.rule
    return (
        f"each step: |target - fp64| <= {c.k:g}x the comparator's largest error so far "
        f"+ tol/10, or allclose: <= 2 tol |fp64| (tol {c.tolerance or 0.0:g})"
    )


def drift(c: TrajectoryCheck) -> str | None:
    """Why the trajectory's windowed mean is gated from a step on (None: it is not)."""
    return says(c.drift) if c.drift is not None else c.drift_reason


def gate(g: Gate) -> str:
    """What a gate found: its finding's words, or the sentence of a gate that has none."""
    return says(g.finding) if g.finding is not None else g.detail or ""


def sensitivity(s: Sensitivity) -> str:
    """The cost ratio over the speed ratio's interval."""
    return (
        f"over the speed ratio's {s.confidence:.0%} interval the target costs "
        f"{s.cost_ratio_low:.2f}x to {s.cost_ratio_high:.2f}x the baseline; each 10% on the "
        "target's price moves that by 10%"
    )


def _fallback(finding: Finding) -> str:
    if finding.code.endswith(".note"):  # an older verdict's sentence, as it was
        return _verbatim(finding.figures)
    figures = ", ".join(f"{k} {v}" for k, v in finding.figures.items())
    return finding.code + (f" ({figures})" if figures else "")


def says(finding: Finding) -> str:
    """The finding in full, with the action that settles it."""
    words = WORDS.get(finding.code)
    if words is None:
        return _fallback(finding)
    text = words.says(finding.figures)
    return text + (f"; {words.action(finding.figures)}" if words.action else "")


def brief(finding: Finding) -> str:
    """The finding in a line or two for the summary screen."""
    words = WORDS.get(finding.code)
    if words is None:
        return _fallback(finding)
    return (words.brief or words.says)(finding.figures)


def action(finding: Finding) -> str | None:
    """What settles the finding (None: nothing to do, or no words for it)."""
    words = WORDS.get(finding.code)
    return words.action(finding.figures) if words is not None and words.action else None


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def how_to_check(code: str) -> str:
    """How to check an unproven item, by its code (an older verdict's sentence as it is)."""
    return HOWS.get(code, code)


def bytes_text(n: int) -> str:
    """Bytes in binary units, three significant figures (``1.25 GiB``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:,.3g} TiB"
