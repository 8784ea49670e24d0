"""``verdict.json``: the outcome of a comparison, section by section, in the order a
careful engineer checks them (fairness, differences, both ran, compatibility, quality,
numerics, speed, cost, memory, phases, contract, what is unproven, operations).

The judge builds a ``Verdict`` from bundles; the report's view model reads it; nothing
digs in dictionaries. ``passed`` and ``exit_code`` derive from the gates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.errors import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
from parity.model.codec import Json, omit_none
from parity.model.fair import Fit, Representativeness, Slo, Tuning
from parity.model.findings import Finding
from parity.model.inputs import MIN_COSINE as MIN_COSINE
from parity.model.inputs import MIN_TOP1 as MIN_TOP1
from parity.model.inputs import CostInputs as CostInputs
from parity.model.inputs import JudgeInputs as JudgeInputs
from parity.model.inputs import Price as Price
from parity.model.metrics import (
    Flops,
    Generation,
    Inference,
    InputPipeline,
    Memory,
    Phases,
    Throughput,
)
from parity.model.placement import Placement
from parity.model.quality import NumericsSection, Quality
from parity.model.roles import ROLES as ROLES
from parity.model.roles import ByRole as ByRole
from parity.model.roles import Role as Role
from parity.model.side import Stop, TimingSteps
from parity.model.spec import SideSpec
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

    side: SideSpec
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
    #: the repeat the noise warnings come from, the noisiest of several (an older
    #: verdict's warnings name it themselves)
    noisiest: str | None = omit_none()
    #: a workload fed by a data loader: its input side, pooled over the ok repeats
    input_pipeline: InputPipeline | None = omit_none()
    #: the cluster node the side ran on (``--cluster``)
    placement: Placement | None = omit_none()
    #: the logs its bundles keep cut (``logs.json``), one sentence each
    logs_cut: tuple[str, ...] | None = omit_none()


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
    """A gate of the verdict: every gate must pass for exit code 0. ``decided`` false: the
    gate did not pass because its evidence was too little to decide (not a pass)."""

    name: str
    passed: bool
    #: what the gate found, in figures (``parity.report.words`` says it); a gate not yet
    #: converted, or read from an older verdict, says it in ``detail`` instead
    finding: Finding | None = omit_none()
    detail: str | None = omit_none()
    decided: bool | None = omit_none()


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
    #: how the section was made, by its code (``parity.report.words.METHODS``); an older
    #: verdict's sentence is kept as it was
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
    #: a paired interval's spread: standard deviation of the rounds' log ratios (absent:
    #: the sides' processes were taken as independent)
    rounds_spread: float | None = omit_none()
    #: and their lag-1 autocorrelation, which widened it (0: none found)
    rounds_autocorrelation: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ThreadPlacement:
    """One placement of the threads (``stats.handoff``): its processes (both sides), their
    median thread handoff figure, and the ratio over them with its interval (absent with
    fewer than two processes of a side in it)."""

    processes: int
    handoff_ns: float
    ratio: float | None = omit_none()
    low: float | None = omit_none()
    high: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ThreadPlacements:
    """The host placed the sides' threads two ways while measuring, and a side's steps moved
    with it: each placement, each side's step time in the slower one over the quicker
    (absent: too few of its processes in one); the speed section's
    ``speed.thread-placements`` finding says what that means."""

    quicker: ThreadPlacement
    slower: ThreadPlacement
    baseline_shift: float | None = omit_none()
    target_shift: float | None = omit_none()
    #: the slower "placement" is threads that stalled each other (a handoff of
    #: milliseconds: a busy machine), not cores the host placed apart
    stalled: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class ComplianceCheck:
    """A check on the speed claim: a compliance run against what process-to-process
    variation explains (``passed`` None: not judged, the variation is unknown with one
    process per side), or one of the machine's steadiness (``Steadiness.checks``).
    ``name`` is its code (``speed.reseeded``); ``finding`` what was seen, in figures
    (``parity.report.words`` says both)."""

    name: str
    passed: bool | None
    finding: Finding
    ratio: float | None = omit_none()
    low: float | None = omit_none()
    high: float | None = omit_none()
    level: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Steadiness:
    """How the machine behaved while measuring, where that changes how to read the ratio
    (``parity.judge.steadiness``): its pace and the sides' load checked (``checks``; a
    failure makes the speed unreliable), the threads placed two ways (``placements``),
    and the findings (busy cores, waits for a core, placements). Absent from the speed
    section where there is nothing to say, as on a dedicated accelerator host."""

    checks: tuple[ComplianceCheck, ...] = ()
    #: the host placed the sides' threads two ways while measuring, and the steps moved
    #: with it: each placement's ratio (``stats.handoff``)
    placements: ThreadPlacements | None = omit_none()
    #: what changes how to read the ratio (``speed.contention``: busy cores widened it)
    findings: tuple[Finding, ...] = ()


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
    #: "undetermined" while the interval is provisional (fewer than 3 processes a side),
    #: or holds 1 but reaches past 0.67-1.5 (``parity.stats.EQUIVALENCE``)
    verdict: Literal["faster", "slower", "indistinguishable", "undetermined"]
    repeats: ByRole[int]
    stop: Stop | None
    note: str | None
    throughput: ByRole[Throughput | None]
    #: the target's compliance runs (re-seeded, identical input)
    compliance: tuple[ComplianceCheck, ...] = ()
    #: steps each side's timing processes ran, and why (None: all the workload's)
    timing: ByRole[TimingSteps | None] | None = omit_none()
    #: the machine's pace, load and thread placements while measuring (None: nothing to
    #: say); every check of it counts in ``reliable``
    steadiness: Steadiness | None = omit_none()
    #: what changes how to read the ratio (``speed.unreliable``: a check failed)
    findings: tuple[Finding, ...] = ()

    def checks(self) -> tuple[ComplianceCheck, ...]:
        """Every check on the speed claim: the compliance runs', then the machine's."""
        return (*self.compliance, *(self.steadiness.checks if self.steadiness else ()))

    def all_findings(self) -> tuple[Finding, ...]:
        """The section's findings, then the machine's steadiness's."""
        return (*self.findings, *(self.steadiness.findings if self.steadiness else ()))


@dataclass(frozen=True, kw_only=True, slots=True)
class SideCost:
    priced: bool
    price: Price | None = omit_none()
    usd_per_accelerator_hour: float | None = omit_none()
    overhead: float | None = omit_none()
    #: what a training run's cost rests on (``cost.basis-*``: time to a loss, a number of
    #: steps, the measured run)
    basis: Finding | None = omit_none()
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
    """The cost ratio over the speed ratio's interval (at ``confidence``)."""

    cost_ratio_low: float
    cost_ratio_high: float
    confidence: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Cost:
    baseline: SideCost
    target: SideCost
    inputs: CostInputs
    available: bool
    #: why there is no cost verdict (``cost.unpriced``, ``cost.no-basis``)
    reason: Finding | None = omit_none()
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


#: the not-yet-proven item a comparison ticks itself when both sides measured their loader
DATA_PIPELINE = "the real data pipeline"
#: what a migration must still prove, by item, and the code of how to check it
#: (``parity.report.words.how_to_check``)
UNPROVEN_ITEMS = (
    ("rollback path", "unproven.rollback"),
    ("sustained load", "unproven.soak"),
    ("failure recovery", "unproven.recovery"),
    ("multi-device scaling", "unproven.scaling"),
    (DATA_PIPELINE, "unproven.data-pipeline"),
)
#: the operational checklist: each answer's key (``[operational]`` in the plan), by item
OPERATIONAL_ITEMS = {
    "instance_availability": "instance availability",
    "quotas": "quotas",
    "storage_and_data_movement": "storage and data movement",
    "monitoring": "monitoring",
    "deployment_tooling": "deployment tooling",
}
#: device flags that change what runs (its timing, its fusion), by the setting they show
#: as among the configuration differences
BEHAVIOUR_FLAGS = {"launch_blocking": "NEURON_LAUNCH_BLOCKING (as after import torch)"}
#: the gate on the torch settings a workload's code changed after set-up
SETTINGS_GATE = "settings as set up"


@dataclass(frozen=True, kw_only=True, slots=True)
class UnprovenItem:
    """An item a migration must still prove: ``evidence`` (a sentence, from a check or an
    older verdict) or ``finding`` (the judge's, in figures) says what was found toward it;
    ``how_to_check`` is a code ``parity.report.words.how_to_check`` says (a sentence in an
    older verdict)."""

    item: str
    checked: bool
    evidence: str | None
    how_to_check: str
    finding: Finding | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class OperationalItem:
    item: str
    answer: str | None
    answered: bool


#: the gate that says the workload failed on its own, alike on both sides (its file and
#: line): the user's error, exit code 2, never the target's failure
WORKLOAD_GATE = "the workload runs"

#: ``verdict.json``'s own version: 2 carries findings (codes and figures) where 1 carried
#: sentences; 3 names the speed checks by code with a finding where 2 said a sentence, and
#: holds the machine's steadiness in one part of the speed section; 4 says a gate's
#: result, why there is no cost verdict, a cost's basis and why no module is named as
#: findings where 3 said sentences; 5 the tuning label (a finding) and each setting's
#: effect (said from the side that has it); verdicts of versions 1 to 4 are still read
#: (``parity.bundle.read_verdict``); 6 lets a quality check carry a finding; 7 a side's
#: determinism too, the loss trajectory's drift (a finding) and rule (a code), the
#: quality gate (a finding), method (a code) and gates not decided (by name, with the
#: steps that decide them), the noisiest repeat apart from its warnings, and says
#: the latency limits, the workload's shape, the fit at production size and the numerics'
#: reference notes by figures and codes (version 6's sentences, in ``detail``,
#: ``drift_reason``, ``rule`` and the like, are read as they are)
VERDICT_SCHEMA = 7


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
    #: what the verdict found beyond its sections' own: the decision's
    #: (``decision.withheld``: no speed or cost verdict, and why)
    findings: tuple[Finding, ...] = ()
    schema_version: int = VERDICT_SCHEMA

    def all_findings(self) -> tuple[Finding, ...]:
        """Every section's findings and the verdict's own, in section order."""
        speed = self.speed.all_findings() if self.speed is not None else ()
        return (*self.findings, *speed)

    @property
    def withheld(self) -> Finding | None:
        """Why there is no speed or cost verdict, where the judge withheld them."""
        return next((f for f in self.findings if f.code.startswith("decision.withheld")), None)

    def __post_init__(self) -> None:
        passed = all(g.passed for g in self.gates)
        object.__setattr__(self, "passed", passed)
        own = any(g.name == WORKLOAD_GATE and not g.passed for g in self.gates)
        # not decided: every gate that did not pass lacked the evidence to (never a pass)
        undecided = all(g.passed or g.decided is False for g in self.gates)
        code = (
            EXIT_OK
            if passed
            else EXIT_USAGE
            if own
            else EXIT_INCONCLUSIVE
            if undecided
            else EXIT_FAIL
        )
        object.__setattr__(self, "exit_code", code)
