"""Two placements of a side's threads while a comparison measured, and what each did to
the sides' steps.

Each host-side process records how long its intra-op threads took to share a small add,
right after its steps (``probes.handoff``). Where the host moved the cores under the
guest, those figures fall into two groups far apart (6.3 and 9.0 µs on this project's
2-vCPU machine) and the steps of one side or both move with them. :func:`two_placements`
finds such a split and measures it: the processes, both sides pooled (the same threads
time the same add), are cut at the widest gap between their sorted log figures, where
that gap is at least :data:`MIN_GAP` and :data:`SEPARATION` times the larger of the two
groups' own spreads, with at least :data:`MIN_GROUP` processes in each group. A machine
whose figures scatter, as a loaded one does, has no such gap and gets no split: its
scatter is the contention note's to tell.

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

from parity.stats.pace import MIN_SHIFT, T_MIN
from parity.stats.processes import Processes, RatioCI, ratio_ci

#: the narrowest gap between the groups' log figures (a factor of 1.15)
MIN_GAP = math.log(1.15)
#: the gap over the larger of the groups' standard deviations of log figures
SEPARATION = 4.0
#: processes in each group, both sides together
MIN_GROUP = 3

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


def _sd(logs: Sequence[float]) -> float:
    n = len(logs)
    if n < 2:
        return 0.0
    mean = math.fsum(logs) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (n - 1))


def split_at(figures: Sequence[float]) -> float | None:
    """The handoff figure (ns) that parts ``figures`` into two placements: the midpoint
    of the widest gap (on a log scale) that passes the module's rules; None where none
    does."""
    logs = sorted(math.log(f) for f in figures if f > 0 and math.isfinite(f))
    if len(logs) < 2 * MIN_GROUP:
        return None
    k = max(range(MIN_GROUP, len(logs) - MIN_GROUP + 1), key=lambda i: logs[i] - logs[i - 1])
    gap = logs[k] - logs[k - 1]
    spread = max(_sd(logs[:k]), _sd(logs[k:]))
    if gap < MIN_GAP or gap < SEPARATION * spread:
        return None
    return math.exp((logs[k] + logs[k - 1]) / 2)


def _shift(quick: Sequence[float], slow: Sequence[float]) -> tuple[float, float] | None:
    """The slow group's mean log step over the quick one's, and its pooled two-sample t."""
    if len(quick) < 2 or len(slow) < 2:
        return None
    a, b = [math.log(x) for x in quick], [math.log(x) for x in slow]
    ma, mb = math.fsum(a) / len(a), math.fsum(b) / len(b)
    squares = math.fsum((x - ma) ** 2 for x in a) + math.fsum((x - mb) ** 2 for x in b)
    se = math.sqrt(squares / (len(a) + len(b) - 2) * (1 / len(a) + 1 / len(b)))
    shift = mb - ma
    return shift, (abs(shift) / se if se > 0 else (math.inf if shift else 0.0))


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
