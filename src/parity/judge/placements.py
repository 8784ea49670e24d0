"""What the processes' thread handoff figures say of where their threads ran: two
placements of the host's cores, or threads that stalled each other, with each one's ratio
(``stats.handoff`` finds them; the speed section carries them, ``judge.speed``)."""

from __future__ import annotations

import statistics

from parity.model.bundle import SideRuns
from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.verdict import ThreadPlacement, ThreadPlacements
from parity.stats.handoff import Process, two_placements
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
        stalled=stalled,
    )


def placements_finding(p: ThreadPlacements) -> Finding:
    """The ``speed.thread-placements`` finding: each placement's processes, handoff figure
    and ratio, and how each side's steps moved between them."""

    def ci(x: ThreadPlacement) -> list[Json] | None:
        return None if x.ratio is None else [x.ratio, x.low, x.high]

    return Finding(
        code="speed.thread-placements",
        severity="reading",
        figures={
            "stalled": p.stalled,
            "quick": p.quicker.processes,
            "slow": p.slower.processes,
            "quick_ns": p.quicker.handoff_ns,
            "slow_ns": p.slower.handoff_ns,
            "baseline_shift": p.baseline_shift,
            "target_shift": p.target_shift,
            "quick_ratio": ci(p.quicker),
            "slow_ratio": ci(p.slower),
        },
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
