"""Fresh processes as the independent units: the speed ratio's t interval (Welch's, or a
paired one over rounds run back to back) and the prediction interval of one more process
(the compliance checks' noise model)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from parity.stats.samples import _as_array
from parity.stats.slope import lag1
from parity.stats.tdist import t_quantile

#: Processes per side before an interval is a precision claim: with 2, each side's spread
#: rests on one degree of freedom.
MIN_PROCESSES = 3
#: Sections a lone process's steps are cut into to estimate its own noise.
SECTIONS = 10
#: "indistinguishable" claims the target within this factor of the baseline either way:
#: an interval that holds 1 but reaches past it (as a loaded machine's can, by several
#: times either way) rules out neither a 1.5x loss nor a 1.5x gain: "undetermined". At
#: 1.5, simulated A/A comparisons (tests/judge/test_speed_simulation.py) with 3 processes a
#: side are called indistinguishable 96-97% of the time at 5% process-to-process spread,
#: as often as the interval covers; 1.25 would drop that to 80-86%.
EQUIVALENCE = 1.5
#: Rounds from which a comparison whose sides ran round by round, back to back, takes the
#: paired interval (:func:`ratio_ci`). Pairing spends half the degrees of freedom (n - 1
#: against Welch's up to 2n - 2) to cancel the machine's pace that both processes of a
#: round share. Simulated (``tests/stats/test_processes.py``, ``benchmarks/coverage.py``'s
#: drifting machine), where nothing drifts the paired interval is a median 12% wider than
#: Welch's at 6 rounds, 7% at 10 and 2% at 30; where the pace wanders 4% a process it is
#: 28% narrower at 10 rounds and 52% at 30, and Welch's over-covers (98-100%). From 10:
#: rounds that stop on precision pick an interval narrow by chance, more often the fewer
#: its degrees of freedom, and pairing from 6 or 8 left the adaptive protocol's final
#: intervals covering 92.4-92.8% (Welch's 93.3% on a steady machine); from 10, 93.1-94.2%.
PAIRED_FROM = 10
#: "undetermined": the interval is provisional, or holds 1 and reaches past
#: :data:`EQUIVALENCE`, so it carries no verdict either way
Verdict = Literal["faster", "slower", "indistinguishable", "undetermined"]
Sided = Literal["two-sided", "lower"]


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
    #: the round of each median, where the processes ran in rounds (None: not known)
    rounds: tuple[int, ...] | None = None
    #: mean of the log medians, and the sum of their squared deviations from it
    mean_log: float = field(init=False, repr=False, compare=False)
    squares: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.medians:
            raise ValueError("a side has no processes: run at least one repeat per side.")
        if not all(math.isfinite(m) and m > 0 for m in self.medians):
            raise ValueError("a process's median step time is not positive: check the timer.")
        if self.rounds is not None and (
            len(self.rounds) != len(self.medians) or len(set(self.rounds)) != len(self.rounds)
        ):
            raise ValueError("a side's rounds must name each process's round once.")
        logs = [math.log(m) for m in self.medians]
        mean = math.fsum(logs) / len(logs)
        object.__setattr__(self, "mean_log", mean)
        object.__setattr__(self, "squares", math.fsum((x - mean) ** 2 for x in logs))

    @classmethod
    def from_steps(
        cls,
        repeats: Sequence[Sequence[float]],
        name: str = "a side",
        *,
        rounds: Sequence[int] | None = None,
    ) -> Processes:
        """One side from its repeats' steady step times (seconds), one list per process,
        and the round each ran in where known."""
        if len(repeats) == 0:
            raise ValueError(f"{name} has no repeats: run at least one repeat per side.")
        arrays = [_as_array(r, f"{name} repeat {i}") for i, r in enumerate(repeats)]
        medians = tuple(float(np.median(a)) for a in arrays)
        if not all(m > 0 for m in medians):
            raise ValueError(f"{name}'s median step time is not positive: check the timer.")
        se, df = _sectioned(arrays[0]) if len(arrays) == 1 else (0.0, 1.0)
        return cls(
            medians=medians,
            lone_se=se,
            lone_df=df,
            rounds=tuple(rounds) if rounds is not None else None,
        )

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
    #: the paired interval's spread: standard deviation of the rounds' log ratios (None:
    #: the sides' processes taken as independent)
    rounds_spread: float | None = None
    #: and their lag-1 autocorrelation as the interval used it (0..0.95; None: unpaired)
    rounds_autocorrelation: float | None = None

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
        """Why the verdict is "undetermined" (a provisional interval, or one too wide to
        call the sides alike), and what would settle it; None when it is not."""
        if not self.provisional:
            if self.verdict != "undetermined":
                return None
            return (
                f"undetermined: the interval [{self.low:.3f}, {self.high:.3f}] holds 1 but "
                f"reaches past {1 / EQUIVALENCE:.2f}-{EQUIVALENCE:.2f}, so it rules out "
                f"neither a {EQUIVALENCE:g}x gain nor a {EQUIVALENCE:g}x loss; more processes "
                "(a larger --budget or --repeats) on a quieter machine would settle it"
            )
        counts = f"{self.baseline_processes} baseline and {self.target_processes} target"
        more = [
            f"{MIN_PROCESSES - n} more {role}"
            for role, n in (
                ("baseline", self.baseline_processes),
                ("target", self.target_processes),
            )
            if n < MIN_PROCESSES
        ]
        settle = (
            f"{' and '.join(more)} process(es) would settle it ({MIN_PROCESSES} per side: "
            "--repeats 3, or a larger --budget)"
        )
        if max(self.baseline_processes, self.target_processes) == 1:
            return (
                "undetermined: one process per side; the interval holds only the step-to-step "
                "noise within each process, not the variation between fresh processes, so it "
                f"is provisional and carries no verdict; {settle}"
            )
        return (
            f"undetermined: {counts} processes leave the process-to-process spread not yet "
            f"estimable, so the interval is provisional and carries no verdict; {settle}"
        )


def _welch_df(va: float, dfa: float, vb: float, dfb: float) -> float:
    """Welch-Satterthwaite degrees of freedom of ``va + vb`` (variances of means)."""
    return (va + vb) ** 2 / (va * va / dfa + vb * vb / dfb)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Rounds:
    """The paired interval's figures: the variance of the mean log ratio, its degrees of
    freedom, and the rounds' spread and lag-1 autocorrelation."""

    variance: float
    df: float
    spread: float
    autocorrelation: float


def _paired(a: Processes, b: Processes) -> _Rounds | None:
    """Each round's log ratio (target over baseline), in round order, where both sides ran
    the same rounds, at least :data:`PAIRED_FROM` of them, reduced to the variance of their
    mean with the AR(1) factor of their lag-1 autocorrelation; else None."""
    if a.rounds is None or b.rounds is None or set(a.rounds) != set(b.rounds):
        return None
    if len(a.rounds) < PAIRED_FROM:
        return None
    base = dict(zip(a.rounds, a.medians, strict=True))
    targ = dict(zip(b.rounds, b.medians, strict=True))
    d = np.array([math.log(targ[r]) - math.log(base[r]) for r in sorted(base)])
    n = d.size
    spread = float(d.std(ddof=1))
    r = lag1(d - d.mean())
    return _Rounds(
        variance=spread**2 / n * (1 + r) / (1 - r),
        df=max(1.0, n * (1 - r) / (1 + r) - 1),
        spread=spread,
        autocorrelation=r,
    )


def _variances(
    a: Processes, b: Processes, rounds: _Rounds | None
) -> tuple[float, float, float, str]:
    """The sampling variances of the sides' mean log medians, the degrees of freedom and
    the method's name: paired rounds where there are enough of them, else Welch's t over
    each side's spread, one side's spread borrowed, or each lone process's sectioning."""
    ma, mb = a.count, b.count
    sa, sb = a.spread, b.spread
    if rounds is not None:
        va, vb, df = rounds.variance, 0.0, rounds.df
        method = (
            "paired t on log per-process medians, round by round; effective n from the "
            "lag-1 autocorrelation"
        )
    elif sa is not None and sb is not None:
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
    return va, vb, df, method


def ratio_ci(
    baseline: Processes,
    target: Processes,
    *,
    confidence: float = 0.95,
    paired: bool = False,
) -> RatioCI:
    """The time ratio target/baseline with a t interval over fresh processes.

    The ratio is ``target.centre / baseline.centre`` (geometric means of the process
    medians). Its log has standard error ``sqrt(s_b^2 / m_b + s_a^2 / m_a)`` from each
    side's spread ``s`` of log medians over its ``m`` processes, with Welch-Satterthwaite
    degrees of freedom: the sides may vary differently. Assumptions: processes are
    independent and their log medians roughly normal with one spread per side; steps within
    a process may be correlated in any way (only the process's median enters). With one
    process on a side, that side borrows the other side's spread; with one on each, the
    interval holds only each process's own noise (sectioning, see :class:`Processes`).

    ``paired``: the caller ran the sides in rounds, one process of each back to back (one
    comparison's A B B A order). Where both sides ran the same rounds, at least
    :data:`PAIRED_FROM` of them, the interval is the paired t on each round's log ratio
    ``d_k`` (standard error ``sd(d) / sqrt(n)``, ``n - 1`` degrees of freedom; the ratio
    is the same geometric mean). A pace that drifts over seconds moves both processes of a
    round alike, so it leaves ``d_k`` and only the process's own variation remains; the
    independent-sides interval counts the drift in each side's spread although the
    interleaving cancels it from the ratio. Where the ratio itself wanders over the run,
    neighbouring rounds' ``d_k`` correlate (as on a machine whose pace wanders within a
    run): the standard error widens and the degrees
    of freedom shrink by the AR(1) factor of their lag-1 autocorrelation
    (:func:`parity.stats.slope.lag1`, as the soak check's slope does). Assumed: the drift
    within one round small beside the processes' own spread.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1) (got {confidence}).")
    a, b = baseline, target
    ma, mb = a.count, b.count
    sa, sb = a.spread, b.spread
    rounds = _paired(a, b) if paired else None
    va, vb, df, method = _variances(a, b, rounds)
    log_ratio = b.mean_log - a.mean_log
    se = math.sqrt(va + vb)
    half = t_quantile(0.5 + confidence / 2.0, df) * se if se > 0 else 0.0
    low, high = math.exp(log_ratio - half), math.exp(log_ratio + half)
    provisional = min(ma, mb) < MIN_PROCESSES
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
        rounds_spread=rounds.spread if rounds is not None else None,
        rounds_autocorrelation=rounds.autocorrelation if rounds is not None else None,
        provisional=provisional,
        verdict=_verdict(low, high, provisional),
    )


def widened(ci: RatioCI, low: float, high: float) -> RatioCI:
    """``ci`` widened to hold ``[low, high]`` as well, its verdict taken again."""
    lo, hi = min(ci.low, low), max(ci.high, high)
    return replace(ci, low=lo, high=hi, verdict=_verdict(lo, hi, ci.provisional))


def _verdict(low: float, high: float, provisional: bool) -> Verdict:
    """What an interval carries: nothing while provisional; faster or slower where it
    excludes 1; indistinguishable only where it also lies within :data:`EQUIVALENCE`."""
    if provisional:
        return "undetermined"
    if high < 1:
        return "faster"
    if low > 1:
        return "slower"
    alike = low >= 1 / EQUIVALENCE and high <= EQUIVALENCE
    return "indistinguishable" if alike else "undetermined"


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
