"""Two placements of a side's threads while a comparison measured, and what each did to
the sides' steps.

Each host-side process records how long its intra-op threads took to share a small add,
right after its steps (``probes.handoff``). Where the host moved the cores under the
guest, those figures fall into two groups far apart (a shared cache or not) and the
steps of one side or both move with them. :func:`two_placements`
finds such a split and measures it. The processes, both sides pooled (the same threads
time the same add), are cut where their sorted log figures leave the least squares
within the two groups (Otsu's threshold). The cut stands where the groups' medians lie
at least :data:`MIN_GAP` apart and :data:`SEPARATION` robust standard deviations (the
median distance of each figure from its group's median, times :data:`ROBUST_SD`), where
each group has at least :data:`MIN_GROUP` figures and :data:`CLEAN` of its figures
within a quarter of that distance of its median, and where no more than
:data:`BETWEEN` of all figures lie between the groups. A process that ran while the
host moved the cores reads in between, and a few must not hide a split; a figure that
scatters over a range, as a loaded machine's do, or heavy tails, must not make one
(``tests/stats/test_handoff.py``: under 1 in 100 of 60 figures from one placement, normal,
Student t3 or spread evenly over 10x). A loaded machine's scatter is the contention
note's to tell.

For each side with at least two processes in each group, the shift of its mean log step
between the groups, and a two-sample t on it; the split is kept where a side moved by at
least ``min_shift`` at a t of at least ``t_min`` (the thresholds of ``stats.pace``), and
the ratio is then read in each placement apart.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from parity.stats.pace import MIN_SHIFT, T_MIN, shift_t
from parity.stats.processes import Processes, RatioCI, ratio_ci

#: the groups' medians at least this far apart on a log scale (a factor of 1.15)
MIN_GAP = math.log(1.15)
#: the medians' distance over the groups' robust standard deviation
SEPARATION = 4.0
#: processes in each group, both sides together
MIN_GROUP = 3
#: a standard deviation from a median absolute deviation (normal figures)
ROBUST_SD = 1.4826
#: the part of each group within a quarter of the medians' distance of its median
CLEAN = 2 / 3
#: the part of all figures that may lie between the groups
BETWEEN = 0.10

#: one process: its side ("baseline" or "target"), its median step (seconds) and its
#: handoff figure (nanoseconds)
Process = tuple[str, float, float]


@dataclass(frozen=True, kw_only=True, slots=True)
class Placements:
    """The two placements: each group's median handoff (ns) and processes, each side's
    step time in the slow group over the quick one (None: too few processes of that side
    in a group), and the ratio in each group (None: fewer than two processes of a side)."""

    quick_ns: float
    slow_ns: float
    quick: int
    slow: int
    baseline_shift: float | None
    target_shift: float | None
    quick_ratio: RatioCI | None
    slow_ratio: RatioCI | None


def split_at(figures: Sequence[float]) -> float | None:
    """The handoff figure (ns) that parts ``figures`` into two placements, or None where
    they do not part (see the module); the cut is the midpoint between the nearest
    figures of the two groups."""
    logs = sorted(math.log(f) for f in figures if f > 0 and math.isfinite(f))
    n = len(logs)
    if n < 2 * MIN_GROUP:
        return None
    k = min(range(MIN_GROUP, n - MIN_GROUP + 1), key=partial(_within, _prefix(logs)))
    low, high = logs[:k], logs[k:]
    mid_low, mid_high = statistics.median(low), statistics.median(high)
    apart = mid_high - mid_low
    off = [abs(x - mid_low) for x in low] + [abs(x - mid_high) for x in high]
    spread = ROBUST_SD * statistics.median(off)
    if apart < max(MIN_GAP, SEPARATION * spread):
        return None
    band = apart / 4
    for group, mid in ((low, mid_low), (high, mid_high)):
        if sum(abs(x - mid) <= band for x in group) < max(MIN_GROUP, CLEAN * len(group)):
            return None
    if sum(mid_low + band < x < mid_high - band for x in logs) > BETWEEN * n:
        return None
    return math.exp((logs[k] + logs[k - 1]) / 2)


def _prefix(logs: Sequence[float]) -> list[tuple[float, float]]:
    """Running sums of the values and of their squares, from an empty start."""
    sums = [(0.0, 0.0)]
    for x in logs:
        total, squares = sums[-1]
        sums.append((total + x, squares + x * x))
    return sums


def _within(sums: Sequence[tuple[float, float]], k: int) -> float:
    """The squares about their own means of the first ``k`` values and of the rest."""
    (s1, q1), (sn, qn) = sums[k], sums[-1]
    n = len(sums) - 1
    s2, q2 = sn - s1, qn - q1
    return (q1 - s1 * s1 / k) + (q2 - s2 * s2 / (n - k))


def _shift(quick: Sequence[float], slow: Sequence[float]) -> tuple[float, float] | None:
    """The slow group's mean log step over the quick one's, and its pooled two-sample t
    (its size)."""
    if len(quick) < 2 or len(slow) < 2:
        return None
    shift, t = shift_t([math.log(x) for x in quick], [math.log(x) for x in slow])
    return shift, abs(t)


def _ratio(group: Sequence[Process]) -> RatioCI | None:
    by = {r: tuple(m for role, m, _ in group if role == r) for r in ("baseline", "target")}
    if len(by["baseline"]) < 2 or len(by["target"]) < 2:
        return None
    return ratio_ci(Processes(medians=by["baseline"]), Processes(medians=by["target"]))


def two_placements(
    processes: Sequence[Process], *, min_shift: float = MIN_SHIFT, t_min: float = T_MIN
) -> Placements | None:
    """The two placements of ``processes`` and what they did, or None where the figures
    do not part in two or no side's steps moved with them (see the module)."""
    cut = split_at([h for _, _, h in processes])
    if cut is None:
        return None
    quick = [p for p in processes if p[2] < cut]
    slow = [p for p in processes if p[2] >= cut]
    shifts: dict[str, float | None] = {}
    moved = False
    for role in ("baseline", "target"):
        found = _shift([m for r, m, _ in quick if r == role], [m for r, m, _ in slow if r == role])
        shifts[role] = math.exp(found[0]) if found is not None else None
        if found is not None and abs(found[0]) >= math.log1p(min_shift) and found[1] >= t_min:
            moved = True
    if not moved:
        return None
    return Placements(
        quick_ns=statistics.median([h for _, _, h in quick]),
        slow_ns=statistics.median([h for _, _, h in slow]),
        quick=len(quick),
        slow=len(slow),
        baseline_shift=shifts["baseline"],
        target_shift=shifts["target"],
        quick_ratio=_ratio(quick),
        slow_ratio=_ratio(slow),
    )
