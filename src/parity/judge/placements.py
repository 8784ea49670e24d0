"""What the processes' thread handoff figures say of where their threads ran: two
placements of the host's cores, or threads that stalled each other, with each one's ratio
(``stats.handoff`` finds them; the speed section carries them, ``judge.speed``)."""

from __future__ import annotations

import statistics

from parity.model.bundle import SideRuns
from parity.model.verdict import ThreadPlacement, ThreadPlacements
from parity.stats.handoff import Placements, Process, two_placements
from parity.stats.processes import RatioCI

#: a handoff this long (ns) is threads that stalled each other, whatever the others read:
#: an idle machine's are microseconds, a stalled process's a scheduler's time slice
STALLED_NS = 1e6


def stalled_count(figures: list[float]) -> int:
    """How many of the processes' handoff figures (ns) are threads that stalled."""
    return sum(f >= STALLED_NS for f in figures)


def thread_placements(processes: list[Process]) -> ThreadPlacements | None:
    """The two placements of ``processes`` (``(role, median step, handoff figure)``) and
    each one's ratio, in the verdict's terms; None where ``stats.handoff`` finds none."""
    found = two_placements(processes)
    if found is None:
        return None
    stalled = found.slow_ns >= STALLED_NS  # not cores the host placed apart
    return ThreadPlacements(
        quicker=_placement(found.quick, found.quick_ns, found.quick_ratio),
        slower=_placement(found.slow, found.slow_ns, found.slow_ratio),
        baseline_shift=found.baseline_shift,
        target_shift=found.target_shift,
        said=_said(found, stalled),
        stalled=stalled,
    )


def _placement(processes: int, handoff_ns: float, ci: RatioCI | None) -> ThreadPlacement:
    if ci is None:
        return ThreadPlacement(processes=processes, handoff_ns=handoff_ns)
    return ThreadPlacement(
        processes=processes, handoff_ns=handoff_ns, ratio=ci.ratio, low=ci.low, high=ci.high
    )


def handoffs(side: SideRuns, role: str) -> list[Process]:
    """Each measured process of a side that recorded a handoff figure: its role, median
    steady step and figure."""
    found: list[Process] = []
    for bundle in side.repeats:
        metrics = bundle.metrics if bundle.ok else None
        if metrics is None or metrics.thread_handoff_ns is None or not metrics.steady_samples:
            continue
        found.append((role, statistics.median(metrics.steady_samples), metrics.thread_handoff_ns))
    return found


def _said(p: Placements, stalled: bool) -> str:
    names = ("the others", "the stalled ones") if stalled else ("the quicker", "the slower")
    moved = " and ".join(
        f"the {role}'s {shift:.2f}x"
        for role, shift in (("baseline", p.baseline_shift), ("target", p.target_shift))
        if shift is not None
    )
    ratios = " and ".join(
        f"{ci.ratio:.3f} [{ci.low:.3f}, {ci.high:.3f}] over {name}"
        for name, ci in zip(names, (p.quick_ratio, p.slow_ratio), strict=True)
        if ci is not None
    )
    if stalled:
        seen = (
            f"in {p.slow} processes the threads stalled each other: they took "
            f"{p.slow_ns / 1e6:.1f} ms to share a small add, against {p.quick_ns / 1e3:.1f} µs "
            f"in the other {p.quick} (on a busy machine, a side's threads queued behind other "
            "work for the process's life)"
        )
        mix = "; the interval over all processes holds them"
    else:
        seen = (
            f"the host placed the threads two ways while measuring: they shared a small add "
            f"in {p.quick_ns / 1e3:.1f} µs in {p.quick} processes and in "
            f"{p.slow_ns / 1e3:.1f} µs in {p.slow} (on a virtual machine, cores that share a "
            "cache or do not, which nothing in it controls)"
        )
        mix = (
            "; the interval over all processes holds the mix of the two this run drew, and "
            "a machine that keeps one placement gives that placement's ratio"
        )
    return (
        f"{seen}; the steps of {names[1]} against {names[0]}: {moved}"
        + (f"; the ratio was {ratios}" if ratios else "")
        + mix
    )
