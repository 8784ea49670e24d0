"""Serving's words: latency limits, a throughput-latency curve's best batch, a soak's
slope gate.
"""

from __future__ import annotations

from parity.model.checks import SlopeGate
from parity.model.codec import decode
from parity.model.fair import (
    SLO_CONFIDENCE,
    SloCheck,
)
from parity.model.reports import CurveBest
from parity.report.words.base import (
    HOWS,
    METHODS,
    WORDS,
    Figures,
    Words,
    _int,
    _num,
    _str,
    _time,
    says,
)


def _limit(f: Figures) -> str:
    """What one latency limit found on one side, from its figures (``SloCheck.figures``)."""
    pct, n, need = _int(f, "percentile"), _int(f, "n"), _int(f, "needed")
    limit_s, status = _num(f, "limit_s"), _str(f, "status")
    bound = f"{_str(f, 'metric')}_p{pct} <= {_time(limit_s)}"
    if status == "unmeasured":
        return f"{bound}: not measured (the workload reports no {_str(f, 'metric')} latency)"
    value, upper = _num(f, "value_s"), f.get("upper_s")
    figure = f"p{pct} {_time(value)} over {n} samples"
    if status == "fail":
        said = f"{figure}: over the limit by {value / limit_s:.3g}x"
    elif status == "pass":
        said = f"{figure}, 95% upper bound {_time(_num(f, 'upper_s'))}: within the limit"
    elif upper is None:
        said = (
            f"{figure}: within the limit, but unproven: a p{pct} needs at least {need} samples "
            f"(1 - q^n >= {SLO_CONFIDENCE:g}), {need - n} more"
        )
    else:
        said = f"{figure}: its 95% upper bound {_time(_num(f, 'upper_s'))} is over the limit"
    return f"{bound}: {said}"


def slo_check(c: SloCheck) -> str:
    """What one latency limit found on one side (an older verdict's sentence as it was)."""
    return c.detail if c.detail is not None else _limit(c.figures())


def _limits(f: Figures) -> str:
    checks = f.get("checks")
    return (
        "; ".join(_limit(c) for c in checks if isinstance(c, dict))
        if isinstance(checks, list)
        else ""
    )


def curve_best(b: CurveBest) -> str:
    """A curve's largest batch within every latency limit on a side."""
    if b.summary is not None:
        return b.summary
    if b.batch_size is None:
        return "no batch size meets every limit"
    goodput = (
        f"{b.goodput_per_s:.4g} requests/s" if b.goodput_per_s is not None else "no throughput"
    )
    price = b.usd_per_1k_requests
    cost = f", ${price:.4g} per 1k requests" if price is not None else ", no price"
    return f"largest batch within every limit: {b.batch_size} ({goodput}{cost})"


WORDS |= {
    "slo.outside": Words(says=_limits),
}


METHODS |= {
    "slo.order-statistic": (
        "a limit passes when the 95% upper confidence bound of its percentile (an order "
        "statistic: the smallest X(k) of n samples with P(Binomial(n, q) <= k-1) >= 0.95) is "
        "within it; that needs n >= ln(0.05)/ln(q) samples: 5 for p50, 29 for p90, 299 for "
        "p99; fewer samples fail as unproven"
    ),
}


def slope(g: SlopeGate) -> str:
    """What a drift gate found: the slope, its interval and the bound, and what that means
    (an older check's or verdict's sentence as it was)."""
    if g.detail is not None:
        return g.detail
    if g.finding is not None:
        return says(g.finding)
    f = g.figure
    if f.slope is None or f.low is None or f.high is None:
        return ""
    said = f"{f.slope:+.3g} {f.unit} [95% {f.low:+.3g}, {f.high:+.3g}], bound {f.bound:g}"
    if not g.passed:
        return said + ": beyond the bound"
    return said + (": not excluded (run longer)" if f.high > f.bound else "")


def _soak_ran(f: Figures) -> str:
    drift = f.get("drift")
    gate = decode(SlopeGate, drift) if isinstance(drift, dict) else None
    said = f"{gate.name} {slope(gate)}" if gate is not None else ""
    return (
        f"parity serve --soak: the {_str(f, 'role')} at {_num(f, 'rate'):.4g} req/s for "
        f"{_num(f, 'duration_s'):g} s: {said}; limits {_str(f, 'limits')}"
    )


HOWS |= {
    "serve.soak": (
        "parity serve ... --soak 1h: constant arrivals at each side's highest passing rate, "
        "judged for latency drift"
    ),
}


WORDS |= {
    "drift.too-few-points": Words(says=lambda f: "too few points for a slope"),
    "drift.too-few-windows": Words(
        says=lambda f: (
            f"{_int(f, 'windows')} windows after warm-up, at least {_int(f, 'needed')} needed: "
            "run longer"
        )
    ),
    "serve.soak-ran": Words(says=_soak_ran),
}
