"""``check.json``: what a rollback, recovery or soak check found, and what it proves.

A passing check ticks the verdict's "not yet proven" item ``item`` for a comparison on
the same sides; ``evidence`` is the one line the verdict shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.codec import omit_none
from parity.model.findings import Finding
from parity.model.quality import LossCheck, OutputCheck
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.workload import FingerprintParts, Kind

CheckName = Literal["rollback", "recovery", "soak"]
ITEMS: dict[CheckName, str] = {
    "rollback": "rollback path",
    "recovery": "failure recovery",
    "soak": "sustained load",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckWorkload:
    spec: WorkloadSpec
    name: str
    size: str
    kind: Kind
    fingerprint: str
    parts: FingerprintParts


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckSides:
    """Rollback: the side that trained first (target) and the one that resumed
    (baseline); recovery and soak: the side checked (device)."""

    target: SideSpec | None = omit_none()
    baseline: SideSpec | None = omit_none()
    device: SideSpec | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class PartRecord:
    """One part's bundle (a fresh worker process), relative to the check directory."""

    path: str
    status: str
    reason: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Slope:
    """A slope with its 95% interval in ``unit``, against its bound."""

    slope: float | None
    low: float | None
    high: float | None
    unit: str
    bound: float
    conclusive: bool | None = omit_none()
    method: str | None = omit_none()
    n: int | None = omit_none()
    #: memory growth: the raw figures behind the per-minute slope
    bytes_per_step: float | None = omit_none()
    bytes_per_min_over_time: float | None = omit_none()
    first_last_bytes: tuple[int, int] | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Gate:
    """A check's plain gate (every part ran, the kill happened, enough windows)."""

    name: str
    passed: bool
    detail: str
    kind: Literal["gate"] = "gate"


@dataclass(frozen=True, kw_only=True, slots=True)
class SlopeGate:
    """A soak gate: fails when the slope's interval lies wholly above the bound; its
    figure says what it found (``parity.report.words.slope``), or ``finding`` why there is
    no slope; ``detail``: what an older check or verdict said instead."""

    name: str
    passed: bool
    detail: str | None = omit_none()
    finding: Finding | None = omit_none()
    kind: Literal["slope"] = "slope"
    figure: Slope


CheckGate = Gate | SlopeGate | LossCheck | OutputCheck


@dataclass(frozen=True, kw_only=True, slots=True)
class Handover:
    """Rollback: the target's first K steps against the baseline's (reported, not gated)."""

    target_loss_at_k: float | None
    baseline_loss_at_k: float | None
    first_k_max_rel_diff: float | None
    note: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Kill:
    """Recovery: when the parent sent SIGKILL and what the worker had reported."""

    signal: str
    by: str
    sent_after_step: int | None
    last_step_reported: int
    steps_lost: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Continuation:
    """A resumed run against the uninterrupted one, from the checkpoint on."""

    continuation_steps: int
    loss_max_rel_diff: float | None
    loss_final_rel_diff: float | None
    loss_tolerance: float
    bitwise_equal_losses: bool
    outputs_rel_rmse: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class SoakFigures:
    duration_s: float
    steps: int | None
    windows: int
    windows_used: int
    warmup_s: float
    median_step_s: float | None = omit_none()
    first_last_window_median_s: tuple[float, float] | None = omit_none()
    steps_per_min: float | None = omit_none()
    latency_drift: Slope | None = omit_none()
    host_rss_growth: Slope | None = omit_none()
    device_allocated_growth: Slope | None = omit_none()
    #: why a memory growth was not measured
    not_measured: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckSettings:
    """Rollback and recovery: K, M and the loss tolerances; soak: duration and bounds."""

    k: int | None = omit_none()
    m: int | None = omit_none()
    steps: int | None = omit_none()
    tolerances: dict[str, float] | None = omit_none()
    duration_s: float | None = omit_none()
    window_s: float | None = omit_none()
    warmup: float | None = omit_none()
    max_drift_per_hour: float | None = omit_none()
    max_host_growth_mib_per_min: float | None = omit_none()
    max_device_growth_mib_per_min: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckFigures:
    """The numbers behind the gates (each check sets its own)."""

    k: int | None = omit_none()
    m: int | None = omit_none()
    continuation: Continuation | None = omit_none()
    handover: Handover | None = omit_none()
    kill: Kill | None = omit_none()
    soak: SoakFigures | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckResult:
    """``check.json``, written last."""

    check: CheckName
    item: str
    passed: bool
    exit_code: int
    reason: str | None
    #: False where no gate failed but one could not decide (a soak slope whose interval
    #: reaches past its bound): not a pass, exit code 3
    conclusive: bool | None = omit_none()
    parity_version: str
    created_unix: float
    workload: CheckWorkload
    sides: CheckSides
    settings: CheckSettings
    gates: tuple[CheckGate, ...]
    figures: CheckFigures
    bundles: dict[str, PartRecord]
    evidence: str
