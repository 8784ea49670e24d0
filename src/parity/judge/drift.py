"""A drift gate: a slope with its 95% interval against a bound, as a soak judges latency
drift and memory growth (``parity check soak``, and ``parity serve --soak``).

The interval allows for autocorrelation (``stats.slope_ci``). The gate fails when the
interval lies wholly above the bound; where it still reaches above the bound the figure
is not conclusive (run longer), never a pass that hides it.
"""

from __future__ import annotations

from collections.abc import Sequence

from parity.model.checks import Slope, SlopeGate
from parity.model.findings import Finding
from parity.stats import slope_ci


def window_for(duration_s: float) -> float:
    """A soak's window: about a hundred of them, between 0.1 s and a minute each."""
    return min(60.0, max(0.1, duration_s / 100))


def slope_gate(
    name: str, x: Sequence[float], y: Sequence[float], scale: float, bound: float, unit: str
) -> SlopeGate:
    """A slope gate: fails when the interval (scaled to ``unit``) lies above ``bound``."""
    fit = slope_ci(x, y)
    if fit is None:
        figure = Slope(slope=None, low=None, high=None, unit=unit, bound=bound)
        few = Finding(code="drift.too-few-points", severity="blocks")
        return SlopeGate(name=name, passed=False, finding=few, figure=figure)
    slope, low, high = fit.slope * scale, fit.low * scale, fit.high * scale
    figure = Slope(
        slope=slope,
        low=low,
        high=high,
        unit=unit,
        bound=bound,
        conclusive=high <= bound or low > bound,
        method=fit.method,
        n=fit.n,
    )
    return SlopeGate(name=name, passed=low <= bound, figure=figure)
