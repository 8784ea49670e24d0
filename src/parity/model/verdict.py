"""``verdict.json``: the outcome of a comparison, section by section, in the order a
careful engineer checks them (fairness, differences, both ran, compatibility, quality,
numerics, speed, cost, memory, phases, contract, what is unproven, operations).

The judge builds a ``Verdict`` from bundles; the report's view model reads it; nothing
digs in dictionaries. ``passed`` and ``exit_code`` derive from the gates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.codec import Json, omit_none
from parity.model.fair import Fit, LatencyLimit, ProductionShape, Representativeness, Slo, Tuning
from parity.model.metrics import (
    Flops,
    Generation,
    Inference,
    InputPipeline,
    Memory,
    Phases,
    Throughput,
)
from parity.model.quality import NumericsSection, Quality
from parity.model.roles import ROLES as ROLES
from parity.model.roles import ByRole as ByRole
from parity.model.roles import Role as Role
from parity.model.side import Stop
from parity.model.stack import PackageDifference, Pins
from parity.model.workload import WorkloadDescription


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkloadInfo:
    name: str | None
    size: str | None
    kind: str | None
    fingerprint: str
    description: WorkloadDescription


@dataclass(frozen=True, kw_only=True, slots=True)
class SideInfo:
    """A side of the comparison: what ran, whether it ended well, its headline figures."""

    spec: str
    status: Literal["ok", "failed"]
    reason: str | None
    stderr_tail: str | None
    repeats: int
    repeats_ok: int
    device_name: str | None
    bundle: str
    median_step_s: float | None
    throughput: Throughput | None
    flops: Flops | None
    generation: Generation | None
    inference: Inference | None
    noise_warnings: tuple[str, ...] = ()
    #: a workload fed by a data loader: its input side, pooled over the ok repeats
    input_pipeline: InputPipeline | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Fairness:
    """Both sides ran the same frozen workload, or each differing field was allowed."""

    fingerprint_match: bool
    fingerprint: str
    differing_fields: tuple[str, ...]
    allowed: dict[str, str]
    #: script mode: the contract is unverified
    verified: bool | None = omit_none()
    note: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfigDifference:
    setting: str
    baseline: str
    target: str


@dataclass(frozen=True, kw_only=True, slots=True)
class EnvironmentDifference:
    """A setting of the environment that differs; a package (``field``: ``package NAME``,
    the values its versions, None where not installed) carries how it differs."""

    field: str
    baseline: Json
    target: Json
    package: PackageDifference | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Gate:
    """A gate of the verdict: every gate must pass for exit code 0."""

    name: str
    passed: bool
    detail: str


# -- compatibility ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class OpAt:
    op: str
    where: str | None
    dtypes: tuple[str, ...] | None = omit_none()
    test_first: bool | None = omit_none()
    count: int | None = omit_none()
    why: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class FallbackSummary:
    backend: str | None
    ops: tuple[str, ...]
    device_mismatch: tuple[OpAt, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasonAt:
    reason: str
    where: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class CompatCounts:
    unsupported: int | None
    fallbacks: int | None
    host_syncs: int | None
    custom_ops: int | None
    ops: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ScanSummaryError:
    type: str
    message: str
    where: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class SideCompatibility:
    """One side's op scan in brief (``scanned`` false: the side has no ops.json)."""

    scanned: bool
    scan_error: ScanSummaryError | None = omit_none()
    after_failure: bool | None = omit_none()
    clean: bool | None = omit_none()
    custom_ops: tuple[OpAt, ...] | None = omit_none()
    unsupported: tuple[OpAt, ...] | None = omit_none()
    fallbacks: FallbackSummary | None = omit_none()
    host_syncs: tuple[OpAt, ...] | None = omit_none()
    graph_breaks: int | None = omit_none()
    graph_break_reasons: tuple[ReasonAt, ...] | None = omit_none()
    fullgraph: bool | None = omit_none()
    compile_device_error: str | None = omit_none()
    recompilations: int | None = omit_none()
    counts: CompatCounts | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class VersionRow:
    name: str
    baseline: str | None
    target: str | None
    mismatch: bool
    one_side: bool | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Compatibility:
    baseline: SideCompatibility
    target: SideCompatibility
    versions: tuple[VersionRow, ...]
    target_clean: bool | None
    method: str


# -- speed and cost --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Interval:
    """The speed ratio's interval; ``provisional`` with too few processes per side to
    estimate the process-to-process spread (then it is no precision claim)."""

    low: float
    high: float
    confidence: float
    half_width_rel: float
    method: str
    df: float | None = omit_none()
    provisional: bool = False
    #: standard deviation of each side's log process medians (None: one process)
    spread: ByRole[float | None] | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ComplianceCheck:
    """A compliance run against what process-to-process variation explains (``passed``
    None: not judged, the variation is unknown with one process per side)."""

    name: str
    passed: bool | None
    detail: str
    ratio: float | None = omit_none()
    low: float | None = omit_none()
    high: float | None = omit_none()
    level: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Speed:
    """The speed ratio target/baseline of steady step times, with its interval."""

    reliable: bool
    unreliable_because: tuple[str, ...]
    baseline_median_s: float | None
    target_median_s: float | None
    ratio: float
    speedup: float
    interval: Interval
    verdict: Literal["faster", "slower", "indistinguishable"]
    repeats: ByRole[int]
    stop: Stop | None
    note: str | None
    throughput: ByRole[Throughput | None]
    compliance: tuple[ComplianceCheck, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Price:
    """An instance's on-demand price, shared by its accelerators."""

    usd_per_hour: float
    accelerators: int = 1
    instance: str | None = None
    source: str = "user"

    def __post_init__(self) -> None:
        if not 0 < self.usd_per_hour < float("inf"):
            raise ValueError(f"price must be positive dollars per hour, got {self.usd_per_hour}")
        if self.accelerators < 1:
            raise ValueError(f"accelerators per instance must be >= 1, got {self.accelerators}")

    @property
    def per_accelerator_hour(self) -> float:
        return self.usd_per_hour / self.accelerators


@dataclass(frozen=True, kw_only=True, slots=True)
class CostInputs:
    """Prices and overheads a cost verdict depends on (resolved before judging)."""

    prices: dict[str, Price] = field(default_factory=dict)
    run_steps: int | None = None
    engineering_hours: float = 0.0
    engineering_rate: float = 0.0
    idle_fraction: float = 0.0
    retry_fraction: float = 0.0
    checkpoint_overhead: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.idle_fraction < 1:
            raise ValueError(f"cost.idle_fraction must be in [0, 1), got {self.idle_fraction}")
        for name in ("retry_fraction", "checkpoint_overhead", "engineering_hours"):
            value = getattr(self, name)
            if not 0 <= value < float("inf"):
                raise ValueError(f"cost.{name} must be 0 or more, got {value}")
        if not 0 <= self.engineering_rate < float("inf"):
            raise ValueError(
                f"cost.engineering_rate must be 0 or more, got {self.engineering_rate}"
            )
        if self.run_steps is not None and self.run_steps < 1:
            raise ValueError(f"cost.run_steps must be at least 1, got {self.run_steps}")

    @property
    def overhead(self) -> float:
        return (1 + self.retry_fraction) * (1 + self.checkpoint_overhead) / (1 - self.idle_fraction)


@dataclass(frozen=True, kw_only=True, slots=True)
class SideCost:
    priced: bool
    price: Price | None = omit_none()
    usd_per_accelerator_hour: float | None = omit_none()
    overhead: float | None = omit_none()
    basis: str | None = omit_none()
    run_seconds: float | None = omit_none()
    success_rate: float | None = omit_none()
    usd_per_successful_run: float | None = omit_none()
    usd_per_1m_tokens: float | None = omit_none()
    usd_per_1k_requests: float | None = omit_none()
    unit: str | None = omit_none()
    unit_cost: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Engineering:
    usd: float
    units_to_repay: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Sensitivity:
    cost_ratio_low: float
    cost_ratio_high: float
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Cost:
    baseline: SideCost
    target: SideCost
    inputs: CostInputs
    available: bool
    reason: str | None = omit_none()
    unit: str | None = omit_none()
    cost_ratio: float | None = omit_none()
    verdict: Literal["cheaper", "more expensive"] | None = omit_none()
    break_even_usd_per_hour: float | None = omit_none()
    engineering: Engineering | None = omit_none()
    sensitivity: Sensitivity | None = omit_none()


# -- the decision's other parts --------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class ContractRow:
    field: str
    baseline: str | int | None
    target: str | int | None
    matches: bool
    allowed: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Contract:
    """What must match (each fingerprint part) and what may differ (the side's settings)."""

    must_match: tuple[ContractRow, ...]
    may_differ: tuple[str, ...]
    configuration_changes: tuple[ConfigDifference, ...]
    holds: bool
    verified: bool | None = omit_none()
    note: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class UnprovenItem:
    item: str
    checked: bool
    evidence: str | None
    how_to_check: str


@dataclass(frozen=True, kw_only=True, slots=True)
class OperationalItem:
    item: str
    answer: str | None
    answered: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """The outcome of a comparison."""

    passed: bool = field(init=False)
    exit_code: int = field(init=False)
    workload: WorkloadInfo
    sides: ByRole[SideInfo]
    fairness: Fairness
    config_differences: tuple[ConfigDifference, ...]
    environment_differences: tuple[EnvironmentDifference, ...]
    #: the plan's pinned versions, checked on both sides (drift is reported, not gated)
    pins: Pins | None = omit_none()
    gates: tuple[Gate, ...]
    compatibility: Compatibility
    quality: Quality | None = None
    numerics: NumericsSection | None = None
    withheld: str | None = None
    speed: Speed | None = None
    cost: Cost | None = None
    memory: ByRole[Memory] | None = None
    phases: ByRole[Phases] | None = None
    #: the fair-comparison rules: tuning asymmetry (its label goes with every speed
    #: figure), the measured shape against production, fit at production size, latency
    #: limits (a gate on the target)
    tuning: Tuning | None = omit_none()
    representativeness: Representativeness | None = omit_none()
    fit: Fit | None = omit_none()
    slo: Slo | None = omit_none()
    contract: Contract
    unproven: tuple[UnprovenItem, ...]
    operational: tuple[OperationalItem, ...]

    def __post_init__(self) -> None:
        passed = all(g.passed for g in self.gates)
        object.__setattr__(self, "passed", passed)
        object.__setattr__(self, "exit_code", 0 if passed else 1)


#: the agreement gates' default thresholds (TorchBench's cosine fallback is 0.99)
MIN_COSINE = 0.99
MIN_TOP1 = 0.99


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeInputs:
    """What a verdict depends on besides the bundles (``inputs.json`` beside them): the
    fingerprint fields allowed to differ (with reasons), a target loss, cost inputs with
    prices already resolved, operational answers, the unproven items that passing
    checks prove (item -> evidence), the package versions pinned, and the agreement
    gates' thresholds: the smallest per-row cosine similarity of embeddings and the
    smallest top-1 agreement of logits with the baseline's."""

    allow: dict[str, str] = field(default_factory=dict)
    target_loss: float | None = None
    cost: CostInputs = field(default_factory=CostInputs)
    operational: dict[str, str] = field(default_factory=dict)
    checked: dict[str, str] = field(default_factory=dict)
    #: expected versions: normalised package name -> pin (``==2.13.*``, ``>=2.9,<2.14``)
    pins: dict[str, str] = field(default_factory=dict)
    min_cosine: float = MIN_COSINE
    min_top1: float = MIN_TOP1
    #: the production shape the workload stands in for ([production], --production)
    production: ProductionShape | None = omit_none()
    #: latency limits gating the target ([slo], --slo)
    slo: tuple[LatencyLimit, ...] = ()
    #: why a tuning asymmetry between the sides is intended ([tuning] intended): the
    #: speed figures then carry no asymmetry label
    tuning_intended: str | None = omit_none()

    def __post_init__(self) -> None:
        if self.target_loss is not None and not -float("inf") < self.target_loss < float("inf"):
            raise ValueError(f"--target-loss must be a finite number, got {self.target_loss}")
        for name in ("min_cosine", "min_top1"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"quality.{name} must be in (0, 1], got {value}")
