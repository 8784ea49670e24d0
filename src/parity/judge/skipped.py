"""What the pre-run plan left out, said in the section it costs (the plan's notes sit under
Speed, which a failing target never gets): a numerics probe the budget cut leaves no module
named, whatever the verdict, and the line says which ``--budget`` runs it."""

from __future__ import annotations

from parity.model.bundle import SideRuns
from parity.model.estimate import Estimate
from parity.model.findings import Finding

#: the estimate's phase whose cut costs the localisation (``measure.estimate.PROBES``)
PROBE = "numerics probe"


def _estimate(*sides: SideRuns) -> Estimate | None:
    for side in sides:
        if side.info is not None and side.info.stop.estimate is not None:
            return side.info.stop.estimate
    return None


def localisation_skipped(a: SideRuns, b: SideRuns) -> Finding | None:
    """Why no module can be named where the plan cut a side's numerics probe, and the
    budget that restores it (None: no probe was cut)."""
    est = _estimate(a, b)
    if est is None:
        return None
    cut = [p for p in est.phases if p.cut is not None and PROBE in p.name]
    if not cut:
        return None
    return Finding(
        code="numerics.probe-cut",
        severity="reading",
        figures={
            "roles": [p.name.split(" ")[0] for p in cut],
            "why": cut[0].cut or "skipped",
            "budget_s": est.full_budget_s,
        },
    )
