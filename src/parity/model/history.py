"""What the history index answers: rows of ``parity ls``, a record of ``parity show``, the
points of ``parity trend`` (``parity.store`` makes them, ``parity.report.history`` shows
them, ``--json`` prints them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.serving import ServeVerdict
from parity.model.verdict import Verdict


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRow:
    """A comparison, a serving comparison or a stand-alone run, as ``parity ls`` lists it
    (a serving comparison's workload is its model, its sides the two endpoints, its speed
    ratio the ratio of the highest rates within the limits)."""

    id: str
    type: Literal["compare", "serve", "run"]
    time_unix: float | None
    workload: str | None
    size: str | None
    sides: str | None
    result: str | None
    path: str
    speed_ratio: float | None = None
    speed_verdict: str | None = None
    median_step_s: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class BundleRow:
    """A bundle of an indexed comparison, with the figures ``trend`` follows."""

    id: str
    role: str | None
    run: str | None
    status: str
    side_spec: str | None
    device_name: str | None
    path: str
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRecord:
    """``parity show``: one comparison (its verdict and bundles), one serving comparison
    (its verdict) or one stand-alone run."""

    id: str
    type: Literal["compare", "serve", "run"]
    path: str
    workload: str | None
    size: str | None
    time_unix: float | None
    #: ``baseline -> target`` for a comparison, the side spec for a run
    sides: str | None = None
    passed: bool | None = None
    exit_code: int | None = None
    verdict: Verdict | None = None
    serving: ServeVerdict | None = None
    bundles: tuple[BundleRow, ...] = ()
    status: str | None = None
    reason: str | None = None
    side_spec: str | None = None
    device_name: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class TrendPoint:
    """One value of a metric: per comparison and side (median over its ok repeats), or
    per stand-alone run."""

    id: str
    time_unix: float | None
    workload: str | None
    size: str | None
    role: str | None
    side: str | None
    value: float
    n: int
