"""The fair-comparison rules' documents: tuning asymmetry between the sides, how far the
measured workload is from the production shape, whether the production model fits each
side's memory, and latency limits (SLOs) as gates.

The judge's inputs (``ProductionShape``, ``LatencyLimit``) and the verdict's sections
(``Tuning``, ``Representativeness``, ``Fit``, ``Slo``); ``parity.judge.tuning``,
``representative``, ``fit`` and ``slo`` build the sections, the report's view reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from parity.model.codec import Json, omit_none
from parity.model.findings import Finding
from parity.model.roles import ByRole, Role
from parity.model.spec import Precision

#: optimizer state bytes per parameter (fp32 states): Adam and AdamW keep two moments,
#: momentum SGD, Lion, Adagrad and RMSprop one, plain SGD none, Adafactor factored
#: second moments (rows + columns: negligible against the parameters, counted as 0)
OPTIMIZER_STATE_BYTES: dict[str, int] = {
    "adamw": 8,
    "adam": 8,
    "sgd": 0,
    "sgd-momentum": 4,
    "lion": 4,
    "adagrad": 4,
    "rmsprop": 4,
    "adafactor": 0,
}
LatencyMetric = Literal["ttft", "tpot", "itl", "e2e", "latency"]
LATENCY_METRICS: tuple[LatencyMetric, ...] = get_args(LatencyMetric)
PERCENTILES = (50, 90, 99)
#: the confidence of a latency limit's upper bound (``parity.judge.slo``)
SLO_CONFIDENCE = 0.95
SloStatus = Literal["pass", "fail", "unproven", "unmeasured"]


#: device flags that are speed optimisations when on (the names adapters report them by)
SPEED_FLAGS = {
    "cudnn_benchmark": "cuDNN autotuning (cudnn.benchmark)",
    "cuda_graphs": "CUDA graphs",
    "graph_capture": "graph capture",
    "flash_sdp": "flash attention",
    "mem_efficient_sdp": "memory-efficient attention",
    "fused_attention": "fused attention",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class ProductionShape:
    """The shape the workload has in production (a plan's ``[production]`` table,
    ``--production KEY=VALUE``): what the measured workload is compared against and the
    memory projection is made for. None: not declared."""

    parameters: int | None = omit_none()
    seq_len: int | None = omit_none()
    batch_size: int | None = omit_none()
    precision: Precision | None = omit_none()
    optimizer: str | None = omit_none()
    max_new_tokens: int | None = omit_none()
    data_pipeline: str | None = omit_none()

    def __post_init__(self) -> None:
        for name in ("parameters", "seq_len", "batch_size", "max_new_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"production.{name} must be at least 1, got {value}")
        if self.optimizer is not None and self.optimizer not in OPTIMIZER_STATE_BYTES:
            raise ValueError(
                f"production.optimizer {self.optimizer!r} is unknown: use one of "
                f"{', '.join(OPTIMIZER_STATE_BYTES)}"
            )


@dataclass(frozen=True, kw_only=True, slots=True)
class LatencyLimit:
    """One latency limit: a percentile of a latency metric at most ``limit_s``."""

    metric: LatencyMetric
    percentile: int
    limit_s: float

    def __post_init__(self) -> None:
        if self.percentile not in PERCENTILES:
            raise ValueError(f"--slo percentile p{self.percentile}: use p50, p90 or p99")
        if not 0 < self.limit_s < float("inf"):
            raise ValueError(f"--slo {self.name} must be a positive time, got {self.limit_s}")

    @property
    def name(self) -> str:
        return f"{self.metric}_p{self.percentile}"


# -- tuning asymmetry ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Optimisation:
    """A speed setting one side has and the other lacks (``side``: the side that has it;
    None where the sides differ with neither ahead, e.g. two compile backends)."""

    setting: str
    baseline: str
    target: str
    side: Role | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Tuning:
    """What each side was tuned with, and whether the speed ratio compares like with like.
    ``label`` is said beside every speed figure (None: symmetric, or declared intended)."""

    asymmetric: bool
    optimisations: tuple[Optimisation, ...]
    #: what the bundles record, and what they cannot show (a method's code,
    #: ``parity.report.words.METHODS``)
    method: str
    intended: str | None = omit_none()
    #: ``tuning.asymmetric``: which side is tuned and the settings
    label: Finding | None = omit_none()


# -- representativeness ----------------------------------------------------------------------


#: the sizes of a workload's shape, each given as a fraction of production's (the other
#: rows are kinds, the same or not, and the data pipeline, measured or not)
SIZES = ("parameters", "seq_len", "batch_size", "max_new_tokens")
PIPELINE = "data_pipeline"
#: every declared size within this factor of production (either way) is representative
SHAPE_FACTOR = 4.0


@dataclass(frozen=True, kw_only=True, slots=True)
class ShapeRow:
    """One dimension of the shape: measured against production (``fraction``: measured /
    production; ``within``: inside the stated factor, or the same value)."""

    name: str
    measured: str
    production: str | None = omit_none()
    fraction: float | None = omit_none()
    within: bool | None = omit_none()
    #: what a verdict of schema 6 or older said of it (``parity.report.words`` says it
    #: from the figures since)
    text: str | None = omit_none()

    def figures(self) -> dict[str, Json]:
        """The row as a finding's figures."""
        made: dict[str, Json] = {"name": self.name, "measured": self.measured}
        made |= {"production": self.production, "fraction": self.fraction}
        return made | {"within": self.within}


@dataclass(frozen=True, kw_only=True, slots=True)
class Representativeness:
    declared: bool
    #: every size within this factor of production (and the same precision, optimizer)
    factor: float
    rows: tuple[ShapeRow, ...]
    representative: bool | None
    #: what a verdict of schema 6 or older said (``parity.report.words`` says it since)
    summary: str | None = omit_none()

    def figures(self) -> dict[str, Json]:
        """The section as a finding's figures (the unproven item's)."""
        rows: list[Json] = [r.figures() for r in self.rows]
        made: dict[str, Json] = {"declared": self.declared, "factor": self.factor}
        return made | {"representative": self.representative, "rows": rows}


# -- fit at production size ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryPart:
    """A part of a projected peak; ``parity_only``: held by parity's own run (a host
    side's loaded copy of the frozen weights), not by the production job."""

    name: str
    bytes: int
    #: how the part was projected, in figures (``parity.report.words.part_how`` says it)
    basis: Finding | None = omit_none()
    #: what a verdict of schema 6 or older said instead
    how: str | None = omit_none()
    parity_only: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class DeviceMemory:
    bytes: int
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class SideFit:
    """One side's projected peak at production size against its device memory."""

    parts: tuple[MemoryPart, ...]
    #: the production job's peak (the parts parity's own run adds left out)
    peak_bytes: int
    #: what parity's run of the production shape would hold (checked against measurement)
    run_peak_bytes: int
    memory: DeviceMemory | None = omit_none()
    fits: bool | None = omit_none()
    #: device memory minus the peak (negative: short by that much)
    margin_bytes: int | None = omit_none()
    #: devices that hold it with FSDP sharding weights, gradients and optimizer states
    fsdp_devices: int | None = omit_none()
    #: what a verdict of schema 6 or older said (``parity.report.words.fit`` says it since)
    summary: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Fit:
    available: bool
    #: how it was projected, by code (``parity.report.words.method``)
    method: str
    #: why it was not projected (``available`` false)
    finding: Finding | None = omit_none()
    #: what a verdict of schema 6 or older said instead of ``finding``
    reason: str | None = omit_none()
    sides: ByRole[SideFit] | None = omit_none()


# -- latency limits --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class SloCheck:
    """One limit on one side: the measured percentile over ``n`` samples, the samples the
    rule needs, the upper confidence bound where there are enough."""

    limit: LatencyLimit
    n: int
    needed: int
    status: SloStatus
    #: what a verdict of schema 6 or older said of it (``parity.report.words`` says it
    #: from the figures since)
    detail: str | None = omit_none()
    value_s: float | None = omit_none()
    upper_s: float | None = omit_none()

    def figures(self) -> dict[str, Json]:
        """The check as a finding's figures (a failing latency gate's ``slo.outside``)."""
        return {
            "metric": self.limit.metric,
            "percentile": self.limit.percentile,
            "limit_s": self.limit.limit_s,
            "n": self.n,
            "needed": self.needed,
            "status": self.status,
            "value_s": self.value_s,
            "upper_s": self.upper_s,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class SloSide:
    checks: tuple[SloCheck, ...]
    passed: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Slo:
    """The latency limits: a gate on the target, the baseline's figures beside it."""

    limits: tuple[LatencyLimit, ...]
    #: the rule's code (``parity.report.words.method``; an older verdict's sentence)
    rule: str
    sides: ByRole[SloSide]
    passed: bool
