"""Statistics behind parity's speed verdict: figures that carry their own uncertainty.

A leaf module: numpy and the standard library only, no parity imports.

- :func:`summarize` -> :class:`Summary`: median, IQR and friends of a sample of step times,
  judged like torch.utils.benchmark's ``Measurement`` (IQR/median > 10% is noisy, > 25%
  gross interference).
- :func:`detect_steady` -> :class:`SteadyState`: where warm-up ends, by MSER-5 (White 1997;
  White, Cobb & Spratt 2000): truncate the first ``d`` points that minimise the squared
  standard error of the remaining mean, computed on batch means of 5.
- :class:`Processes`: one side's fresh processes, each reduced to the median of its steady
  steps (its *location*).
- :func:`ratio_ci` -> :class:`RatioCI`: the time ratio target/baseline with a Welch t
  interval on the log locations (Welch 1947; Satterthwaite 1946 degrees of freedom).
  Processes are the independent units, so the interval holds process-to-process variation
  and, inside each location, however correlated the steps were; it is provisional below
  :data:`MIN_PROCESSES` per side.
- :func:`prediction_interval` -> :class:`PredictionInterval`: where one more process's
  location falls, from process-to-process variation (the compliance checks' noise model).
- :func:`slope_ci` -> :class:`SlopeCI`: a least-squares slope with a t interval that
  allows for autocorrelated residuals (the soak check's drift and growth).
- :func:`t_quantile`, :func:`t_sf`: Student's t for any real degrees of freedom > 0.
- :func:`should_stop` -> :class:`StopDecision`: adaptive stopping on precision (never on a
  provisional interval), budget or a repeat cap.
- :func:`interleaved_order`: ABBA run order, so that linear drift cancels.

Why a t interval on process locations and not a bootstrap: with 2-6 processes per side (what
a 30 s budget reaches) a bootstrap over processes has almost nothing to resample, and one
over steps treats correlated steps as independent; both covered the true ratio 72-83% of the
time where 95% was claimed. ``benchmarks/coverage.py`` compares the two.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np

__all__ = [
    "MIN_PROCESSES",
    "PredictionInterval",
    "Processes",
    "RatioCI",
    "Sided",
    "SlopeCI",
    "SteadyState",
    "StopDecision",
    "Summary",
    "detect_steady",
    "interleaved_order",
    "prediction_interval",
    "ratio_ci",
    "should_stop",
    "slope_ci",
    "summarize",
    "t_quantile",
    "t_sf",
]

NOISY_IQR_REL = 0.10
GROSS_IQR_REL = 0.25
MSER_BATCH = 5
#: Processes per side before an interval is a precision claim: with 2, each side's spread
#: rests on one degree of freedom.
MIN_PROCESSES = 3
#: Sections a lone process's steps are cut into to estimate its own noise.
SECTIONS = 10

Noise = Literal["ok", "noisy", "gross"]
Verdict = Literal["faster", "slower", "indistinguishable"]
StopReason = Literal["precision", "budget", "max_repeats"]
Sided = Literal["two-sided", "lower"]


def _as_array(samples: Sequence[float], what: str) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError(f"{what} is empty: measure at least one step before summarising it.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} holds a NaN or infinite time: check the timer and the step.")
    return x


@dataclass(frozen=True, kw_only=True, slots=True)
class Summary:
    """A sample of step times in seconds, with its spread and its own noise judgement."""

    n: int
    median: float
    iqr: float
    mean: float
    stdev: float
    min: float
    max: float
    p10: float
    p90: float

    @property
    def iqr_rel(self) -> float:
        """IQR as a fraction of the median (inf when the median is not positive)."""
        if self.median > 0:
            return self.iqr / self.median
        return 0.0 if self.iqr == 0 else math.inf

    @property
    def noise(self) -> Noise:
        """``"ok"`` (IQR/median <= 10%), ``"noisy"`` (> 10%) or ``"gross"`` (> 25%)."""
        rel = self.iqr_rel
        if rel > GROSS_IQR_REL:
            return "gross"
        if rel > NOISY_IQR_REL:
            return "noisy"
        return "ok"

    def warnings(self) -> list[str]:
        """Sentences that say what is wrong with this sample and how to fix it."""
        out: list[str] = []
        pct = f"{self.iqr_rel:.0%}" if math.isfinite(self.iqr_rel) else "unbounded"
        if self.noise == "gross":
            out.append(
                f"IQR is {pct} of the median (> {GROSS_IQR_REL:.0%}): gross interference "
                "(another process, throttling or clock changes); rerun on an idle machine "
                "before trusting this figure"
            )
        elif self.noise == "noisy":
            out.append(
                f"IQR is {pct} of the median (> {NOISY_IQR_REL:.0%}): the machine was noisy; "
                "rerun on an idle machine or add repeats"
            )
        if self.n < 5:
            out.append(
                f"only {self.n} sample(s): the median and IQR are unreliable; "
                "measure at least 5 steady steps"
            )
        return out

    def to_dict(self) -> dict[str, float | int | str]:
        """JSON-ready fields plus ``iqr_rel`` and ``noise``."""
        return {**asdict(self), "iqr_rel": self.iqr_rel, "noise": self.noise}


def summarize(samples: Sequence[float]) -> Summary:
    """Summarise step times (seconds); percentiles interpolate linearly (numpy default)."""
    x = _as_array(samples, "the sample")
    p10, p25, p50, p75, p90 = np.percentile(x, [10, 25, 50, 75, 90])
    return Summary(
        n=int(x.size),
        median=float(p50),
        iqr=float(p75 - p25),
        mean=float(x.mean()),
        stdev=float(x.std(ddof=1)) if x.size > 1 else 0.0,
        min=float(x.min()),
        max=float(x.max()),
        p10=float(p10),
        p90=float(p90),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class SteadyState:
    """Where the steady state starts: ``samples[start:]`` are steady."""

    start: int
    capped: bool
    method: str

    @property
    def message(self) -> str | None:
        """A sentence when the steady state was not reached within the cap, else None."""
        if not self.capped:
            return None
        return (
            f"steady state not reached within the cap (truncated at sample {self.start}): "
            "the step time was still trending; run more warm-up steps or longer repeats"
        )

    def to_dict(self) -> dict[str, int | bool | str | None]:
        return {**asdict(self), "message": self.message}


def _mser_argmin(y: np.ndarray, dmax: int) -> int:
    """MSER: the ``d`` in ``[0, dmax]`` minimising ``sum((y[d:] - mean)^2) / (n - d)^2``."""
    n = y.size
    y = y - np.median(y)  # centre for numerically safe running sums
    s1 = np.cumsum(y[::-1])[::-1][: dmax + 1]
    s2 = np.cumsum((y * y)[::-1])[::-1][: dmax + 1]
    m = n - np.arange(dmax + 1, dtype=np.float64)
    stat = np.maximum(s2 - s1 * s1 / m, 0.0) / (m * m)
    return int(np.argmin(stat))  # first minimum: the shortest truncation among ties


def detect_steady(
    samples: Sequence[float], *, cap_fraction: float = 0.5, min_steady: int = 5
) -> SteadyState:
    """Find the first steady sample by MSER-5, never truncating more than ``cap_fraction``.

    MSER picks the truncation point ``d`` that minimises the squared standard error of the
    mean of what remains, ``sum((x[d:] - mean)^2) / (n - d)^2``: cutting warm-up shrinks the
    spread faster than it shrinks the sample. With at least ``2 * min_steady`` batches the
    statistic runs on batch means of 5 (MSER-5, smoother) and ``start`` is a multiple of 5;
    otherwise on raw values. ``d`` is searched over ``[0, cap]`` with ``cap`` the smaller
    of ``cap_fraction * n`` and ``n - min_steady``; a minimum at the cap means the series
    was still trending there, reported as ``capped=True``.

    Tiny samples (``n < 2 * min_steady``) are too short for MSER: ``start`` is 1 when the
    first sample is the slowest of at least 3 (a first step that paid for first use),
    else 0.
    """
    if not 0 <= cap_fraction < 1:
        raise ValueError(f"cap_fraction must be in [0, 1) (got {cap_fraction}).")
    if min_steady < 1:
        raise ValueError(f"min_steady must be at least 1 (got {min_steady}).")
    x = _as_array(samples, "the sample")
    n = int(x.size)
    if n < 2 * min_steady:
        drop_first = n >= 3 and x[0] > x[1:].max()
        return SteadyState(start=int(drop_first), capped=False, method="tiny:first-slowest")
    if n // MSER_BATCH >= 2 * min_steady:
        nb = n // MSER_BATCH
        y = x[: nb * MSER_BATCH].reshape(nb, MSER_BATCH).mean(axis=1)
        unit, method = MSER_BATCH, f"MSER-{MSER_BATCH}"
    else:
        y, unit, method = x, 1, "MSER"
    cap_samples = min(math.floor(cap_fraction * n), n - min_steady)
    dmax = cap_samples // unit
    d = _mser_argmin(y, dmax)
    return SteadyState(start=d * unit, capped=dmax > 0 and d == dmax, method=method)


# -- Student's t -------------------------------------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (DLMF 8.17.22),
    by the modified Lentz method; converges fast for ``x < (a + 1) / (a + b + 2)``."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for num in (even, odd):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        a * math.log(x)
        + b * math.log1p(-x)
        - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df > 0`` degrees of freedom (real, not only
    whole: Welch's degrees of freedom are fractional)."""
    if not df > 0:
        raise ValueError(f"degrees of freedom must be greater than 0 (got {df}).")
    tail = 0.5 * _beta_inc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def _t_log_pdf(t: float, df: float) -> float:
    return (
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df > 0`` degrees of freedom.

    Closed forms for 1 and 2 degrees of freedom; otherwise Newton's method on ``log t``
    against :func:`t_sf`, started from the Cornish-Fisher expansion around the normal;
    the tail probability of the result is within 1e-8 (relative) of ``1 - p``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1) (got {p}).")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be greater than 0 (got {df}).")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df == 1.0:
        return math.tan(math.pi * (p - 0.5))
    if df == 2.0:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = NormalDist().inv_cdf(p)
    t = max(z, z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df))
    log_q = math.log1p(-p)
    for _ in range(100):
        sf = t_sf(t, df)
        step = (math.log(sf) - log_q) * sf / (math.exp(_t_log_pdf(t, df)) * t)
        step = min(max(step, -1.0), 1.0)
        t *= math.exp(step)
        if abs(step) < 1e-12:
            break
    return t


# -- one side's processes ----------------------------------------------------------------


def _sectioned(x: np.ndarray) -> tuple[float, float]:
    """The log-scale standard error of one process's median step and its degrees of freedom,
    by sectioning (Asmussen & Glynn 2007, sec. III.5): the steps, in order, are cut into up
    to :data:`SECTIONS` contiguous sections of at least 5 steps; the spread of the sections'
    log medians over ``sqrt(k)`` holds the correlation of neighbouring steps that an
    independent-sample formula would miss. ``(0, 1)`` for a single step."""
    k = min(SECTIONS, max(2, x.size // 5), x.size)
    if k < 2:
        return 0.0, 1.0
    sections = np.log([float(np.median(s)) for s in np.array_split(x, k)])
    return float(sections.std(ddof=1) / math.sqrt(k)), float(k - 1)


@dataclass(frozen=True, kw_only=True, slots=True)
class Processes:
    """One side's fresh processes, each reduced to the median of its steady steps.

    A process's median is its *location*; the ratio and its interval work on the logs of the
    locations. ``lone_se``/``lone_df`` carry a lone process's own noise (from
    :func:`_sectioned`): with one process that is all there is to go on.
    """

    medians: tuple[float, ...]
    lone_se: float = 0.0
    lone_df: float = 1.0
    #: mean of the log medians, and the sum of their squared deviations from it
    mean_log: float = field(init=False, repr=False, compare=False)
    squares: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.medians:
            raise ValueError("a side has no processes: run at least one repeat per side.")
        if not all(math.isfinite(m) and m > 0 for m in self.medians):
            raise ValueError("a process's median step time is not positive: check the timer.")
        logs = [math.log(m) for m in self.medians]
        mean = math.fsum(logs) / len(logs)
        object.__setattr__(self, "mean_log", mean)
        object.__setattr__(self, "squares", math.fsum((x - mean) ** 2 for x in logs))

    @classmethod
    def from_steps(cls, repeats: Sequence[Sequence[float]], name: str = "a side") -> Processes:
        """One side from its repeats' steady step times (seconds), one list per process."""
        if len(repeats) == 0:
            raise ValueError(f"{name} has no repeats: run at least one repeat per side.")
        arrays = [_as_array(r, f"{name} repeat {i}") for i, r in enumerate(repeats)]
        medians = tuple(float(np.median(a)) for a in arrays)
        if not all(m > 0 for m in medians):
            raise ValueError(f"{name}'s median step time is not positive: check the timer.")
        se, df = _sectioned(arrays[0]) if len(arrays) == 1 else (0.0, 1.0)
        return cls(medians=medians, lone_se=se, lone_df=df)

    @property
    def count(self) -> int:
        return len(self.medians)

    @property
    def centre(self) -> float:
        """The geometric mean of the process medians (seconds): the side's step time."""
        return math.exp(self.mean_log)

    @property
    def spread(self) -> float | None:
        """Standard deviation of the log medians (about the relative process-to-process
        spread); None with one process."""
        return math.sqrt(self.squares / (self.count - 1)) if self.count > 1 else None


# -- the ratio and its interval ----------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class RatioCI:
    """Time ratio target/baseline (< 1: the target is faster) with its interval.

    ``provisional``: fewer than :data:`MIN_PROCESSES` processes on a side, so the
    process-to-process spread is not yet estimable and the interval is no precision claim
    (:attr:`note` says why). ``baseline_spread``/``target_spread``: standard deviation of
    each side's log process medians (None with one process).
    """

    ratio: float
    low: float
    high: float
    confidence: float
    method: str
    df: float
    baseline_processes: int
    target_processes: int
    baseline_spread: float | None
    target_spread: float | None
    provisional: bool
    verdict: Verdict

    @property
    def speedup(self) -> float:
        """Baseline time over target time (> 1: the target is faster)."""
        return 1.0 / self.ratio

    @property
    def half_width_rel(self) -> float:
        """Half the interval's width as a fraction of the ratio."""
        return (self.high - self.low) / 2.0 / self.ratio

    @property
    def note(self) -> str | None:
        """Why the interval is provisional, and what to do; None when it is not."""
        if not self.provisional:
            return None
        fewest = min(self.baseline_processes, self.target_processes)
        if max(self.baseline_processes, self.target_processes) == 1:
            return (
                "one process per side: the interval holds only the step-to-step noise within "
                "each process, not the variation between fresh processes; it is provisional, "
                f"not a precision claim: run at least {MIN_PROCESSES} repeats per side"
            )
        return (
            f"{fewest} process(es) on a side: the process-to-process spread is not yet "
            "estimable, so the interval is provisional, not a precision claim: run at least "
            f"{MIN_PROCESSES} repeats per side"
        )

    def to_dict(self) -> dict[str, float | int | str | bool | None]:
        return {
            **asdict(self),
            "speedup": self.speedup,
            "half_width_rel": self.half_width_rel,
            "note": self.note,
        }


def _welch_df(va: float, dfa: float, vb: float, dfb: float) -> float:
    """Welch-Satterthwaite degrees of freedom of ``va + vb`` (variances of means)."""
    return (va + vb) ** 2 / (va * va / dfa + vb * vb / dfb)


def ratio_ci(baseline: Processes, target: Processes, *, confidence: float = 0.95) -> RatioCI:
    """The time ratio target/baseline with a t interval over fresh processes.

    The ratio is ``target.centre / baseline.centre`` (geometric means of the process
    medians). Its log has standard error ``sqrt(s_b^2 / m_b + s_a^2 / m_a)`` from each
    side's spread ``s`` of log medians over its ``m`` processes, with Welch-Satterthwaite
    degrees of freedom: the sides may vary differently. Assumptions: processes are
    independent and their log medians roughly normal with one spread per side; steps within
    a process may be correlated in any way (only the process's median enters). With one
    process on a side, that side borrows the other side's spread; with one on each, the
    interval holds only each process's own noise (sectioning, see :class:`Processes`).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1) (got {confidence}).")
    a, b = baseline, target
    ma, mb = a.count, b.count
    sa, sb = a.spread, b.spread
    if sa is not None and sb is not None:
        va, vb = sa * sa / ma, sb * sb / mb
        df = _welch_df(va, ma - 1, vb, mb - 1) if va + vb > 0 else float(ma + mb - 2)
        method = "Welch t on log per-process medians"
    elif sa is not None or sb is not None:
        spread = sa if sa is not None else sb
        assert spread is not None
        va, vb = spread * spread / ma, spread * spread / mb
        df = float(max(ma, mb) - 1)
        method = "t on log per-process medians; the one-process side given the other's spread"
    else:
        va, vb = a.lone_se**2, b.lone_se**2
        df = _welch_df(va, a.lone_df, vb, b.lone_df) if va + vb > 0 else 1.0
        method = "t on one process per side; its own noise by sectioning, no process variation"
    log_ratio = b.mean_log - a.mean_log
    se = math.sqrt(va + vb)
    half = t_quantile(0.5 + confidence / 2.0, df) * se if se > 0 else 0.0
    low, high = math.exp(log_ratio - half), math.exp(log_ratio + half)
    verdict: Verdict = "faster" if high < 1 else "slower" if low > 1 else "indistinguishable"
    return RatioCI(
        ratio=math.exp(log_ratio),
        low=low,
        high=high,
        confidence=confidence,
        method=method,
        df=df,
        baseline_processes=ma,
        target_processes=mb,
        baseline_spread=sa,
        target_spread=sb,
        provisional=min(ma, mb) < MIN_PROCESSES,
        verdict=verdict,
    )


# -- one more process: the compliance checks' noise model --------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class PredictionInterval:
    """Where one more process's median step should fall, as a ratio to the side's centre.

    ``sided="lower"`` bounds only from below (``high`` is None): a run may be slower, not
    faster, than process-to-process variation explains.
    """

    low: float
    high: float | None
    level: float
    sided: Sided
    df: float
    processes: int

    def contains(self, ratio: float) -> bool:
        return self.low <= ratio and (self.high is None or ratio <= self.high)

    @property
    def bounds(self) -> str:
        """``0.930-1.080`` or, one-sided, ``0.930``."""
        return f"{self.low:.3f}" if self.high is None else f"{self.low:.3f}-{self.high:.3f}"

    def to_dict(self) -> dict[str, float | int | str | None]:
        return asdict(self)


def prediction_interval(
    side: Processes,
    *,
    other: Processes | None = None,
    level: float = 0.975,
    sided: Sided = "two-sided",
) -> PredictionInterval | None:
    """A prediction interval for one new process's location on ``side``.

    The new location minus the side's mean log location has variance ``s^2 (1 + 1/m)``
    (Geisser 1993, ch. 2). ``s^2`` is the larger of the side's own spread and the spread
    pooled over both sides' processes, each about its own centre, with ``m_a + m_b - 2``
    degrees of freedom: the machine makes most of the spread, and pooling gives the 2-3
    processes of a short comparison enough degrees of freedom to judge by, while taking
    the larger never lets a quiet ``other`` narrow a noisy ``side``. None when no spread is
    estimable (one process in all).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level}).")
    squares, df = side.squares, side.count - 1
    own = squares / df if df > 0 else 0.0
    if other is not None:
        squares += other.squares
        df += other.count - 1
    if df == 0:
        return None
    s = math.sqrt(max(squares / df, own) * (1.0 + 1.0 / side.count))
    q = t_quantile(level if sided == "lower" else 0.5 + level / 2.0, df) * s
    return PredictionInterval(
        low=math.exp(-q),
        high=None if sided == "lower" else math.exp(q),
        level=level,
        sided=sided,
        df=float(df),
        processes=side.count + (other.count if other is not None else 0),
    )


# -- a least-squares slope and its interval ----------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class SlopeCI:
    """A least-squares slope with its t interval; ``autocorrelation`` as used."""

    slope: float
    low: float
    high: float
    n: int
    level: float
    autocorrelation: float
    method: str = "least squares; t interval, effective n from the lag-1 autocorrelation"


def slope_ci(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, level: float = 0.95
) -> SlopeCI | None:
    """Least-squares slope of ``y`` over ``x`` with a t interval for autocorrelated noise;
    None with fewer than 4 points or no spread in ``x``.

    Residuals of a time series are autocorrelated (a noisy neighbour slows several
    windows in a row), which a plain t interval ignores. The lag-1 autocorrelation ``r``
    of the residuals (bias-corrected by ``(1 + 3r) / n``, clamped to 0..0.95) widens the
    standard error by ``sqrt((1 + r) / (1 - r))`` and leaves ``n (1 - r) / (1 + r) - 2``
    degrees of freedom. Simulated AR(1) noise with 100 points: 96% coverage at r = 0,
    92-94% at r = 0.5-0.8.
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = xs.size
    if n < 4 or float(np.ptp(xs)) == 0.0:
        return None
    xc = xs - xs.mean()
    sxx = float((xc * xc).sum())
    slope = float((xc * (ys - ys.mean())).sum() / sxx)
    resid = ys - ys.mean() - slope * xc
    ss = float((resid * resid).sum())
    r = float((resid[1:] * resid[:-1]).sum() / ss) if ss > 0 else 0.0
    r = min(max(r + (1 + 3 * r) / n, 0.0), 0.95)
    se = math.sqrt(ss / (n - 2) / sxx) * math.sqrt((1 + r) / (1 - r))
    df = max(1.0, n * (1 - r) / (1 + r) - 2)
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return SlopeCI(
        slope=slope, low=slope - half, high=slope + half, n=int(n), level=level, autocorrelation=r
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class StopDecision:
    """Why measuring stopped, with a sentence for the report."""

    reason: StopReason
    message: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def should_stop(
    ci: RatioCI,
    *,
    precision: float,
    elapsed_s: float,
    budget_s: float,
    repeats: int,
    min_repeats: int = 2,
    max_repeats: int = 30,
) -> StopDecision | None:
    """Decide after each repeat (per side) whether to stop measuring; None: keep going.

    Checked in order: ``"precision"`` when at least ``min_repeats`` repeats gave an
    interval that is not provisional (see :data:`MIN_PROCESSES`) and whose half width is
    at most ``precision`` of the ratio; ``"max_repeats"`` at
    ``max_repeats``; ``"budget"`` when another repeat, at the mean cost so far
    (``elapsed_s / repeats``), would overrun ``budget_s``. The budget wins over
    ``min_repeats``: it is a hard limit.
    """
    if not precision > 0:
        raise ValueError(f"precision must be greater than 0 (got {precision}).")
    if not budget_s > 0:
        raise ValueError(f"budget_s must be greater than 0 (got {budget_s}).")
    if not 1 <= min_repeats <= max_repeats:
        raise ValueError(
            f"need 1 <= min_repeats <= max_repeats (got {min_repeats} and {max_repeats})."
        )
    width = ci.half_width_rel
    got = f"±{width:.1%} at {ci.confidence:.0%} confidence after {repeats} repeat(s)"
    if repeats >= min_repeats and not ci.provisional and width <= precision:
        return StopDecision(
            reason="precision", message=f"precision reached: {got} (asked ±{precision:.1%})"
        )
    if repeats >= max_repeats:
        return StopDecision(
            reason="max_repeats",
            message=(
                f"stopped at the repeat cap ({max_repeats}) with {got}, wider than the "
                f"±{precision:.1%} asked: the workload is noisier than that precision "
                "allows; accept a coarser precision or quiet the machine"
            ),
        )
    per_repeat = elapsed_s / repeats if repeats > 0 else 0.0
    if elapsed_s + per_repeat > budget_s:
        short = "" if repeats >= min_repeats else f" (fewer than the {min_repeats} wanted)"
        if ci.provisional:
            short += (
                f" (provisional: fewer than {MIN_PROCESSES} processes per side leave their "
                "spread unknown)"
            )
        return StopDecision(
            reason="budget",
            message=(
                f"time budget spent ({elapsed_s:.0f} s of {budget_s:.0f} s, another repeat "
                f"would not fit) with {got}{short}; raise the budget for a tighter interval"
            ),
        )
    return None


def interleaved_order(
    repeats: int, sides: Sequence[str] = ("baseline", "target"), *, seed: int | None = None
) -> list[tuple[str, int]]:
    """Run order ``[(side, repeat_index), ...]`` in ABBA alternation: A B B A A B B A ...

    Round ``k`` runs every side once, in order for even ``k`` and reversed for odd ``k``.
    Under linear drift (the machine heats up, a background job ramps) each side's mean
    position in time is then the same over every pair of rounds, so the drift adds the
    same to both sides and cancels from the ratio; plain A B A B would charge B one
    slot's drift per round. With ``repeats`` odd, one round's imbalance is left. A seed
    shuffles the side order of round 0 (which side starts); the alternation and the
    balance (``repeats`` runs per side) are kept.
    """
    if repeats < 0:
        raise ValueError(f"repeats must be 0 or greater (got {repeats}).")
    order = list(sides)
    if not order or len(set(order)) != len(order):
        raise ValueError(f"sides must be distinct and non-empty (got {order}).")
    if seed is not None:
        order = [order[i] for i in np.random.default_rng(seed).permutation(len(order))]
    out: list[tuple[str, int]] = []
    for k in range(repeats):
        out.extend((side, k) for side in (order if k % 2 == 0 else order[::-1]))
    return out
