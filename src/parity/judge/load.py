"""Where other work on the machine held the cores more while one side's processes ran
than while the other's did, and the steps followed it: the speed ratio at equal load
(``stats.load``) beside the plain one, and the interval widened to hold both.

Each process records how long its threads waited for a core per second of its steps
(``Metrics.waited_share``, ``probes.waiting``). A competing job shifts the processes that
overlap it; with the sides' rounds interleaved that is mostly both sides alike, but a job
that starts or stops mid-run, or a side whose threads lose more to it, moves the ratio
while every process looks steady within itself. The check is there only where the sides'
mean waits differ enough to move the ratio by ``MIN_SHIFT`` through a slope that the
processes show (``SLOPE_T``): otherwise the plain interval stands. It fails (the speed
unreliable) where the two intervals do not overlap: one ratio does not describe the run.
"""

from __future__ import annotations

import math
import statistics

from parity.model.bundle import SideRuns
from parity.model.findings import Finding
from parity.model.verdict import ComplianceCheck
from parity.stats import RatioCI
from parity.stats.load import LoadAdjusted, load_adjusted
from parity.stats.processes import widened

LOAD_CHECK = "the sides' processes under one load"
#: the least move of the ratio, from the sides' different waits, that is said
MIN_SHIFT = 0.02
#: the slope of step time on wait must stand this many standard errors from nil
SLOPE_T = 2.0
#: a mean wait for a core (seconds a second, over both sides' processes) from which the
#: speed section says the steps paid it
WAITED = 0.10


def waits(side: SideRuns) -> list[tuple[float, float]]:
    """Each successful process's median steady step and its wait per second."""
    found = []
    for b in side.repeats:
        m = b.metrics
        if b.ok and m is not None and m.steady_samples and m.waited_share is not None:
            found.append((statistics.median(m.steady_samples), m.waited_share))
    return found


def load_check(a: SideRuns, b: SideRuns, ci: RatioCI) -> tuple[ComplianceCheck | None, RatioCI]:
    """The check and the interval it leaves (see the module); ``(None, ci)`` where the
    sides' waits do not move the ratio."""
    adj = load_adjusted(waits(a), waits(b))
    if adj is None or abs(adj.slope_t) < SLOPE_T:
        return None, ci
    if abs(math.log(adj.shift)) < math.log1p(MIN_SHIFT):
        return None, ci
    held = adj.low <= ci.high and ci.low <= adj.high
    return ComplianceCheck(name=LOAD_CHECK, passed=held, detail=_said(adj, ci, held)), widened(
        ci, adj.low, adj.high
    )


def _said(adj: LoadAdjusted, ci: RatioCI, held: bool) -> str:
    more = "target" if adj.target_waited > adj.baseline_waited else "baseline"
    said = (
        f"the {more}'s processes waited longer for a core (other work on the machine: "
        f"{adj.target_waited:.2f} s a second for the target's, {adj.baseline_waited:.2f} for "
        f"the baseline's) and their steps followed the wait (t {adj.slope_t:.1f}): at equal "
        f"load the ratio is {adj.ratio:.3f} [{adj.low:.3f}, {adj.high:.3f}] against "
        f"{ci.ratio:.3f} [{ci.low:.3f}, {ci.high:.3f}]"
    )
    if held:
        return said + "; the interval is widened to hold both"
    return said + "; one ratio does not describe this run: measure again on a quiet machine"


def waited_finding(a: SideRuns, b: SideRuns) -> Finding | None:
    """Both sides' processes waited for a core while stepping (other work on the
    machine): a wait both pay adds to each step alike, which moves a ratio toward 1, so
    a quiet machine's ratio may lie outside the interval. A reading, not a block; None on
    a machine where they waited less than ``WAITED`` s a second, or where it is unknown."""
    means = {}
    for role, side in (("baseline", a), ("target", b)):
        found = [w for _, w in waits(side)]
        if not found:
            return None
        means[role] = statistics.fmean(found)
    if statistics.fmean(means.values()) < WAITED:
        return None
    return Finding(code="speed.waited", severity="reading", figures=dict(means))
