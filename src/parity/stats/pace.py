"""A change of the machine's pace while a comparison measured: both sides' processes
shift together at one point of the run order.

A virtual machine's pace can change under it (the host moving its vCPUs between cores
that share a cache and cores that do not, which each process's thread handoff figure
shows: ``stats.handoff``): mid-run, both sides' processes slow at once, by different
factors, so the ratio moves. Each period is steady within itself, a Welch interval over
the whole run holds both periods and is wide, and two runs a minute apart can give
intervals that do not overlap. No load on the machine shows it.

:func:`pace_change` scans every split of the run order (each part with at least
``min_side`` processes of each side) for one where both sides' mean log process medians
move the same way, each by at least ``min_shift`` and each at a two-sample t of at least
``t_min``; of those it takes the split with the largest smaller t. The two conditions
together keep it quiet on a steady machine, however noisy: scanning the splits of
independent processes, two t statistics of 4 at one split at once are rare (the
simulation in ``tests/stats/test_pace.py`` finds fewer than 1 in 200 comparisons of 30 a
side, even with heavy-tailed noise), and a shift under ``min_shift`` is left to the
interval.

The machine can also change how one side runs and not the other: with the CPU's bf16
units off (``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2``, as on a CPU without
them), a float32 baseline whose threads hand work to each other can switch between two
speeds while an emulated bf16 target, whose steps are dominated by the emulation, holds
its pace: the ratio moves while the baseline alone does. :func:`ratio_change` finds such
a split from the ratio itself: the target's shift over the baseline's, at least
``min_shift``, at a t of at least ``t_min`` (the two sides' pooled variances within the
parts); a change of pace that moves both sides alike leaves the ratio and is not one.
Its simulation finds fewer than 1 in 100 on steady machines, a drifting pace included.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

#: a shift smaller than this (on both sides' step times) is left to the interval
MIN_SHIFT = 0.10
#: each side's two-sample t at the split must reach this
T_MIN = 4.0
#: processes of each side in each part of the split
MIN_SIDE = 3


@dataclass(frozen=True, kw_only=True, slots=True)
class PaceChange:
    """Where in the run order the pace changed (``at``: the first process after it, an
    index into the order), each side's step time after over before, and the ratio
    target/baseline in each part (geometric means of its processes). ``shared``: both
    sides shifted together (:func:`pace_change`), else the ratio itself moved
    (:func:`ratio_change`)."""

    at: int
    baseline_shift: float
    target_shift: float
    ratio_before: float
    ratio_after: float
    before: int
    after: int
    t: float
    shared: bool = True


def _part(logs: Sequence[float]) -> tuple[float, float, int]:
    n = len(logs)
    mean = math.fsum(logs) / n
    return mean, math.fsum((x - mean) ** 2 for x in logs), n


def shift_t(before: Sequence[float], after: Sequence[float]) -> tuple[float, float]:
    """The shift of the mean of ``after`` over ``before`` (logs) and its two-sample (pooled)
    t statistic."""
    ma, sa, na = _part(before)
    mb, sb, nb = _part(after)
    shift = mb - ma
    s2 = (sa + sb) / (na + nb - 2)
    se = math.sqrt(s2 * (1 / na + 1 / nb))
    if se == 0:
        return shift, math.inf if shift else 0.0
    return shift, shift / se


def pace_change(
    order: Sequence[tuple[str, float]],
    *,
    min_side: int = MIN_SIDE,
    min_shift: float = MIN_SHIFT,
    t_min: float = T_MIN,
) -> PaceChange | None:
    """The change of pace in ``order`` (``("baseline" | "target", process median)`` in run
    order), or None where there is none (see the module)."""
    best: PaceChange | None = None
    for k, parts in _splits(order, min_side):
        (db, tb), (dt, tt) = (shift_t(*parts[role]) for role in ("baseline", "target"))
        same_way = db * dt > 0
        big = min(abs(db), abs(dt)) >= math.log1p(min_shift)
        t = min(abs(tb), abs(tt))
        if same_way and big and t >= t_min and (best is None or t > best.t):
            best = _change(k, parts, t, shared=True)
    return best


def ratio_change(
    order: Sequence[tuple[str, float]],
    *,
    min_side: int = MIN_SIDE,
    min_shift: float = MIN_SHIFT,
    t_min: float = T_MIN,
) -> PaceChange | None:
    """The split of ``order`` (as :func:`pace_change` takes it) where the ratio itself
    changed, whichever side moved; None where it held (see the module)."""
    best: PaceChange | None = None
    for k, parts in _splits(order, min_side):
        shift = var = 0.0
        for role, sign in (("target", 1.0), ("baseline", -1.0)):
            (ma, sa, na), (mb, sb, nb) = (_part(p) for p in parts[role])
            shift += sign * (mb - ma)
            var += (sa + sb) / (na + nb - 2) * (1 / na + 1 / nb)
        t = abs(shift) / math.sqrt(var) if var > 0 else (math.inf if shift else 0.0)
        if abs(shift) >= math.log1p(min_shift) and t >= t_min and (best is None or t > best.t):
            best = _change(k, parts, t, shared=False)
    return best


def any_change(order: Sequence[tuple[str, float]]) -> PaceChange | None:
    """A change of the machine's pace in ``order``, else a change of the ratio itself (each
    at its defaults): what the speed's pace check judges."""
    return pace_change(order) or ratio_change(order)


Parts = dict[str, tuple[list[float], list[float]]]


def _splits(order: Sequence[tuple[str, float]], min_side: int) -> Iterator[tuple[int, Parts]]:
    """Each split of the run order with at least ``min_side`` processes of each side in
    each part: its index and each side's log medians before and after it."""
    if any(m <= 0 or not math.isfinite(m) for _, m in order):
        raise ValueError("a process median is not a positive number: check the timer.")
    logs = [(role, math.log(m)) for role, m in order]
    for k in range(1, len(logs)):
        parts = {
            role: ([x for r, x in logs[:k] if r == role], [x for r, x in logs[k:] if r == role])
            for role in ("baseline", "target")
        }
        if all(min(len(a), len(b)) >= min_side for a, b in parts.values()):
            yield k, parts


def _change(k: int, parts: Parts, t: float, *, shared: bool) -> PaceChange:
    (b0, b1), (t0, t1) = (parts[r] for r in ("baseline", "target"))
    return PaceChange(
        at=k,
        baseline_shift=math.exp(_part(b1)[0] - _part(b0)[0]),
        target_shift=math.exp(_part(t1)[0] - _part(t0)[0]),
        ratio_before=math.exp(_part(t0)[0] - _part(b0)[0]),
        ratio_after=math.exp(_part(t1)[0] - _part(b1)[0]),
        before=min(len(b0), len(t0)),
        after=min(len(b1), len(t1)),
        t=t,
        shared=shared,
    )
