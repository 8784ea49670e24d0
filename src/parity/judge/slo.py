"""Latency limits as gates: ``--slo ttft_p99=200ms,tpot_p50=30ms,e2e_p99=2s`` (a plan's
``[slo]`` table) gates the target; the baseline's figures against the same limits are
shown beside it.

A percentile from few samples is a guess. The rule (order statistics, distribution-free):
the upper 95% confidence bound of the q-quantile is the smallest order statistic X(k) of
n samples with P(Binomial(n, q) <= k - 1) >= 0.95. It exists only when 1 - q^n >= 0.95,
that is n >= ln(0.05) / ln(q): 5 samples for a p50, 29 for a p90, 299 for a p99. A limit
passes when that bound is within it; with fewer samples (or a bound above the limit) it
fails as unproven, naming the count it needs; a measured percentile above the limit
fails outright.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from parity.model.bundle import SideRuns
from parity.model.fair import SLO_CONFIDENCE, LatencyLimit, Slo, SloCheck, SloSide, SloStatus
from parity.model.reports import CurveBest
from parity.model.roles import ByRole
from parity.model.verdict import Verdict
from parity.probes.latency import generation_samples
from parity.stats.quantiles import upper_rank

CONFIDENCE = SLO_CONFIDENCE
#: the rule a limit passes by (``parity.report.words`` says it)
RULE = "slo.order-statistic"


def needed(percentile: int, confidence: float = CONFIDENCE) -> int:
    """Samples an upper bound of the percentile needs: the least n with 1 - q^n >= c."""
    q = percentile / 100
    return math.ceil(math.log(1 - confidence) / math.log(q) - 1e-9)


def upper_bound(samples: Sequence[float], percentile: int) -> float | None:
    """The distribution-free upper confidence bound of the percentile (None: too few)."""
    rank = upper_rank(len(samples), percentile / 100, CONFIDENCE)
    return None if rank is None else sorted(samples)[rank - 1]


def percentile(samples: Sequence[float], p: int) -> float:
    """The percentile as the verdict's figures compute it (linear interpolation)."""
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * p / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def side_samples(side: SideRuns) -> dict[str, list[float]]:
    """Each latency metric's samples over the steady steps of every ok repeat."""
    out: dict[str, list[float]] = {}
    for bundle in side.ok:
        m = bundle.metrics
        if m is None:
            continue
        if m.inference is not None:
            out.setdefault("latency", []).extend(m.steady_samples)
        g = m.generation
        if g is not None and g.token_times_ns is not None:
            for key, values in generation_samples(g.token_times_ns, g.requests_per_step).items():
                out.setdefault(key, []).extend(values)
    return out


def check(limit: LatencyLimit, samples: Sequence[float]) -> SloCheck:
    """One limit against one side's samples (``parity.report.words.slo_check`` says it)."""
    n, need = len(samples), needed(limit.percentile)
    if n == 0:
        return SloCheck(limit=limit, n=0, needed=need, status="unmeasured")
    value = percentile(samples, limit.percentile)
    upper = upper_bound(samples, limit.percentile)
    status: SloStatus
    if value > limit.limit_s:
        status = "fail"
    elif upper is None or upper > limit.limit_s:
        status = "unproven"
    else:
        status = "pass"
    return SloCheck(limit=limit, n=n, needed=need, status=status, value_s=value, upper_s=upper)


def judge_slo(limits: tuple[LatencyLimit, ...], sides: ByRole[SideRuns]) -> Slo | None:
    """Every limit on both sides (None: no limits given); the gate is the target's."""
    if not limits:
        return None
    made: dict[str, SloSide] = {}
    for role, side in sides.items():
        samples = side_samples(side)
        checks = tuple(check(limit, samples.get(limit.metric, [])) for limit in limits)
        made[role] = SloSide(checks=checks, passed=all(c.status == "pass" for c in checks))
    pair = ByRole(baseline=made["baseline"], target=made["target"])
    return Slo(limits=limits, rule=RULE, sides=pair, passed=pair.target.passed)


def best_batch(points: Sequence[tuple[int, Verdict]]) -> ByRole[CurveBest] | None:
    """Per side, the largest batch of a curve that meets every latency limit, its goodput
    and its cost per 1k requests (None: the verdicts have no limits)."""
    if not points or points[0][1].slo is None:
        return None
    made: dict[str, CurveBest] = {}
    for role in ("baseline", "target"):
        meeting = [(bs, v) for bs, v in points if v.slo is not None and _met(v.slo, role)]
        if not meeting:
            made[role] = CurveBest(batch_size=None)
            continue
        bs, v = max(meeting, key=lambda p: p[0])
        info = v.sides.baseline if role == "baseline" else v.sides.target
        rate = info.throughput.samples_per_s if info.throughput is not None else None
        side_cost = None
        if v.cost is not None:
            side_cost = (
                v.cost.baseline if role == "baseline" else v.cost.target
            ).usd_per_1k_requests
        made[role] = CurveBest(batch_size=bs, goodput_per_s=rate, usd_per_1k_requests=side_cost)
    return ByRole(baseline=made["baseline"], target=made["target"])


def _met(slo: Slo, role: str) -> bool:
    return (slo.sides.baseline if role == "baseline" else slo.sides.target).passed
