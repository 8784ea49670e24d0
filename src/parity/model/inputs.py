"""``inputs.json``: what a verdict depends on besides the bundles (allowed differences, a
target loss, prices and cost overheads, pinned versions, the agreement gates'
thresholds). Apart from ``verdict.py`` so that building a request imports no figures
(nor numpy, which they pull in): a refused option costs no more than parsing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from parity.model.codec import DecodeError, omit_none
from parity.model.fair import LatencyLimit, ProductionShape


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


@dataclass(frozen=True, slots=True)
class Minimum:
    """An agreement gate's minimum, in (0, 1]: the one rule, checked where the value is
    made, by the option table's reader and by a stored verdict's inputs alike. In JSON it
    is its number."""

    value: float

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number, got {value!r}")
        if not value > 0:
            raise ValueError(f"must be more than 0, got {value:g}")
        if value > 1:
            raise ValueError(f"must be at most 1, got {value:g}")
        object.__setattr__(self, "value", float(value))

    @classmethod
    def of(cls, name: str, value: object) -> Minimum:
        """``value`` as a minimum (one made already as it is); a ValueError naming ``name``."""
        if isinstance(value, Minimum):
            return value
        try:
            return cls(value)  # type: ignore[arg-type]  # checked by the constructor
        except ValueError as exc:
            raise ValueError(f"{name} {exc}") from None

    def __codec_encode__(self) -> float:
        return self.value

    @classmethod
    def __codec_decode__(cls, data: object, path: str) -> Minimum:
        try:
            return cls(data)  # type: ignore[arg-type]  # checked by the constructor
        except ValueError as exc:
            raise DecodeError(path, str(exc)) from None

    @classmethod
    def __codec_schema__(cls) -> dict[str, object]:
        return {"type": "number", "exclusiveMinimum": 0, "maximum": 1}


#: the agreement gates' default thresholds (TorchBench's cosine fallback is 0.99)
MIN_COSINE = Minimum(0.99)
MIN_TOP1 = Minimum(0.99)


class Minimums(NamedTuple):
    """The agreement gates' minimums as the judge takes them, one typed value: the
    smallest per-row cosine similarity of embeddings and the smallest top-1 agreement of
    logits with the baseline's."""

    cosine: float
    top1: float


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
    min_cosine: Minimum = MIN_COSINE
    min_top1: Minimum = MIN_TOP1
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

    @property
    def minimums(self) -> Minimums:
        return Minimums(cosine=self.min_cosine.value, top1=self.min_top1.value)
