"""The speed ratio at equal load: a side's processes that waited longer for a core (other
work on the machine, ``probes.waiting``) ran slower for it, and where one side's
processes waited more than the other's, the plain ratio carries that difference.

:func:`load_adjusted` fits each process's log median step as its side's level plus one
slope on the seconds it waited per second (a common slope: the machine's load slows both
sides' steps alike), by least squares within the sides (analysis of covariance), and
gives the log ratio at equal load with its t interval on ``n - 3`` degrees of freedom.
Where the processes' waits barely differ the slope is unknown and the interval wide; where
the two sides waited alike the adjustment is nil. It is a finding beside the ratio's own
interval, not a replacement: a slope read off a handful of processes is itself noisy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from parity.stats.tdist import t_quantile

#: processes a side needs before a slope is fitted (three levels, one slope: n - 3 df)
MIN_SIDE = 3
#: waits spread less than this (sum of squares about the sides' means) fit no slope
NO_SPREAD = 1e-12


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadAdjusted:
    """The ratio at equal load: ``ratio`` with its interval, the slope (log step per second
    waited per second) with its t, and each side's mean wait."""

    ratio: float
    low: float
    high: float
    slope: float
    slope_t: float
    baseline_waited: float
    target_waited: float
    df: int

    @property
    def shift(self) -> float:
        """The plain ratio over the adjusted one: what the sides' different waits did."""
        return math.exp(self.slope * (self.target_waited - self.baseline_waited))


def _centred(xs: Sequence[float]) -> tuple[float, list[float]]:
    mean = math.fsum(xs) / len(xs)
    return mean, [x - mean for x in xs]


def load_adjusted(
    baseline: Sequence[tuple[float, float]],
    target: Sequence[tuple[float, float]],
    confidence: float = 0.95,
) -> LoadAdjusted | None:
    """The log-ratio at equal load from each side's ``(median step s, waited share)`` per
    process; None with fewer than ``MIN_SIDE`` a side, or where no process waited other
    than its side's mean (no slope to fit)."""
    if min(len(baseline), len(target)) < MIN_SIDE:
        return None
    if any(m <= 0 or not math.isfinite(m) or not math.isfinite(w) for m, w in (*baseline, *target)):
        raise ValueError("a process median or wait is not a positive finite number")
    sides = []
    for runs in (baseline, target):
        ybar, y = _centred([math.log(m) for m, _ in runs])
        wbar, w = _centred([w for _, w in runs])
        sides.append((ybar, y, wbar, w))
    sxx = math.fsum(x * x for _, _, _, w in sides for x in w)
    if sxx <= NO_SPREAD:
        return None
    slope = math.fsum(a * b for _, y, _, w in sides for a, b in zip(w, y, strict=True)) / sxx
    rss = math.fsum((a - slope * b) ** 2 for _, y, _, w in sides for a, b in zip(y, w, strict=True))
    n = len(baseline) + len(target)
    df = n - 3
    s2 = rss / df if df > 0 else math.inf
    (yb, _, wb, _), (yt, _, wt, _) = sides
    gap = wt - wb
    log_ratio = (yt - yb) - slope * gap
    se = math.sqrt(s2 * (1 / len(baseline) + 1 / len(target) + gap * gap / sxx))
    half = t_quantile(0.5 + confidence / 2, df) * se if df > 0 else math.inf
    slope_se = math.sqrt(s2 / sxx)
    return LoadAdjusted(
        ratio=math.exp(log_ratio),
        low=math.exp(log_ratio - half),
        high=math.exp(log_ratio + half),
        slope=slope,
        slope_t=slope / slope_se if slope_se > 0 else math.inf,
        baseline_waited=wb,
        target_waited=wt,
        df=df,
    )
