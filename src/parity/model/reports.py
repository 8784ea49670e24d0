"""Documents a command writes beside its comparisons: the throughput-latency curve
(``curve.json``) and the scaling report (``scaling.json``)."""

from __future__ import annotations

from dataclasses import dataclass

from parity.model.codec import omit_none
from parity.model.metrics import Percentiles, Throughput
from parity.model.quality import Quality
from parity.model.verdict import ByRole, Verdict


@dataclass(frozen=True, kw_only=True, slots=True)
class CurveSide:
    latency_s: Percentiles | None
    throughput: Throughput | None


@dataclass(frozen=True, kw_only=True, slots=True)
class CurvePoint:
    """One batch size: each side's latency percentiles and throughput, and the verdict."""

    batch_size: int
    exit_code: int
    sides: ByRole[CurveSide]

    @classmethod
    def of(cls, batch_size: int, verdict: Verdict) -> CurvePoint:
        def side(role: str) -> CurveSide:
            info = verdict.sides.of("baseline" if role == "baseline" else "target")
            latency = info.inference.latency_s if info.inference else None
            if latency is None and info.generation is not None:
                latency = info.generation.e2e_s
            return CurveSide(latency_s=latency, throughput=info.throughput)

        return cls(
            batch_size=batch_size,
            exit_code=verdict.exit_code,
            sides=ByRole(baseline=side("baseline"), target=side("target")),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class CurveBest:
    """With latency limits: the largest batch whose figures meet every limit on a side,
    its goodput (requests per second at that batch, every limit met) and its cost."""

    batch_size: int | None
    goodput_per_s: float | None = omit_none()
    usd_per_1k_requests: float | None = omit_none()
    #: an older report's sentence (``parity.report.words.curve_best`` says it since)
    summary: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Curve:
    batch_sizes: tuple[int, ...]
    points: tuple[CurvePoint, ...]
    best: ByRole[CurveBest] | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ScalingPoint:
    """One process count: how it ended and what it measured."""

    nproc: int
    status: str
    reason: str | None
    wall_s: float
    median_step_s: float | None = None
    samples_per_s: float | None = None
    allreduce_share: float | None = None
    speedup: float | None = None
    efficiency: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class LossCurves:
    """The smallest and the largest count's loss curves, through the verdict's gates."""

    baseline: str
    target: str
    quality: Quality | None
    passed: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class ScalingReport:
    side: str
    workload: str
    points: tuple[ScalingPoint, ...]
    definition: str
    loss_curves: LossCurves | None = omit_none()
    passed: bool
