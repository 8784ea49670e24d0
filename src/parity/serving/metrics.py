"""A step's figures from its request events (definitions as REFERENCE.md states them).

- TTFT and E2E from the *schedule* (the time the request was due: queueing in the client
  or the server counts, as MLPerf measures) and, beside them, from the *send*;
- TPOT per request = (E2E − TTFT) / (output tokens − 1), the same from either origin;
- ITL per token: each chunk's gap to the one before, spread evenly over the tokens it
  carries (tokens counted by the local tokenizer); ICL, the gap per chunk, kept apart;
- output tokens: the server's ``usage`` where it gave it, else the local count; the sum of
  their differences is reported.

A step is client-bound where the p99 of the dispatch lag (send - when the request could
go) passes the bound, or where the event loop's lag p99 passes both the bound and
``LOOP_SHARE`` of the median TTFT. Percentiles carry distribution-free 95% bounds
(``stats.quantiles``). The figures are over the good (``ok``) requests; the limit checks
are over every request sent, a request that was not good counting as over every limit (it
sits in the denominator, as goodput's does).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from parity.model.fair import LatencyLimit
from parity.model.serving import (
    Decision,
    LimitCheck,
    Quantile,
    RequestEvent,
    ServeWindow,
    StepFigures,
)
from parity.stats.quantiles import quantile_interval

PERCENTILES = (50, 90, 99)
NS = 1e-9
#: error texts kept per step
FIRST_ERRORS = 3
#: the event loop's lag makes a step client-bound only past this share of the median TTFT
#: (from the send) as well as past the bound: a late stamp of a few milliseconds on an answer
#: of seconds misleads nobody, while a late send always counts (it hides queueing)
LOOP_SHARE = 0.05


def output_tokens(e: RequestEvent) -> int:
    return e.usage_count if e.usage_count is not None else e.local_count


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def quantile(samples: Sequence[float], percentile: int) -> Quantile | None:
    got = quantile_interval(samples, percentile / 100)
    if got is None:
        return None
    return Quantile(
        percentile=percentile,
        n=got.n,
        value_s=_finite(got.value),
        lower_s=_finite(got.lower),
        upper_s=_finite(got.upper),
    )


def dispatch_lag(e: RequestEvent) -> float:
    """Seconds from when the request could go (due, or its concurrency slot freed) to its
    send: the client's own delay."""
    return (e.sent_ns - (e.ready_ns if e.ready_ns is not None else e.scheduled_ns)) * NS


def quantiles(samples: Sequence[float]) -> tuple[Quantile, ...]:
    return tuple(q for p in PERCENTILES if (q := quantile(samples, p)) is not None)


def samples(events: Sequence[RequestEvent], *, origin: str) -> dict[str, list[float]]:
    """Each metric's samples over the good requests; ``origin`` is schedule or send."""
    out: dict[str, list[float]] = {"ttft": [], "e2e": [], "tpot": [], "itl": [], "icl": []}
    for e in events:
        if e.status != "ok" or e.first_ns is None or e.end_ns is None:
            continue
        start = e.scheduled_ns if origin == "schedule" else e.sent_ns
        out["ttft"].append((e.first_ns - start) * NS)
        out["e2e"].append((e.end_ns - start) * NS)
        n = output_tokens(e)
        if n >= 2:
            out["tpot"].append((e.end_ns - e.first_ns) * NS / (n - 1))
        pairs = zip(e.chunks_ns[:-1], e.chunks_ns[1:], e.chunk_sizes[1:], strict=True)
        for before, after, count in pairs:
            gap = (after - before) * NS
            out["icl"].append(gap)
            out["itl"].extend([gap / count] * count if count > 0 else [])
    return out


def _check(limit: LatencyLimit, values: Sequence[float], bad: int) -> LimitCheck:
    """Pass where the upper bound is within the limit, fail where the lower bound is over
    it; ``bad`` requests that were not good count as over it (an infinite sample)."""
    pooled = [*values, *([math.inf] * bad)]
    got = quantile_interval(pooled, limit.percentile / 100)
    status: Literal["pass", "fail", "unproven"] = "unproven"
    if got is not None and got.upper is not None and got.upper <= limit.limit_s:
        status = "pass"
    elif got is not None and got.lower is not None and got.lower > limit.limit_s:
        status = "fail"
    q = quantile(pooled, limit.percentile)
    return LimitCheck(name=limit.name, limit_s=limit.limit_s, status=status, quantile=q)


def metric_of(limit: LatencyLimit) -> str:
    return "e2e" if limit.metric == "latency" else limit.metric


def checks(
    limits: Sequence[LatencyLimit], events: Sequence[RequestEvent]
) -> tuple[LimitCheck, ...]:
    got = samples(events, origin="schedule")
    bad = sum(e.status != "ok" for e in events)
    return tuple(_check(x, got[metric_of(x)], bad) for x in limits)


def decide(found: Sequence[LimitCheck], client_bound: bool) -> Decision:
    if client_bound:
        return "client-bound"
    if any(c.status == "fail" for c in found):
        return "fail"
    if found and all(c.status == "pass" for c in found):
        return "pass"
    return "unproven"


def _median(values: Sequence[float]) -> float:
    q = quantile_interval(values, 0.5)
    return 0.0 if q is None else q.value


def p99(values: Sequence[float]) -> float:
    q = quantile_interval(values, 0.99)
    return 0.0 if q is None else q.value


def figures(
    events: Sequence[RequestEvent],
    *,
    label: str,
    rate: float | None,
    concurrency: int | None,
    limits: Sequence[LatencyLimit],
    loop_lags: Sequence[float],
    lag_bound_s: float,
    saturated: bool,
) -> StepFigures:
    """Everything a step's events say, and whether the step counts as the server's."""
    good = [e for e in events if e.status == "ok"]
    ends = [e.end_ns for e in events if e.end_ns is not None]
    start = min((e.scheduled_ns for e in events), default=0)
    duration = max(((max(ends) - start) * NS) if ends else 0.0, 1e-9)
    tokens = [output_tokens(e) for e in good]
    lag = p99([dispatch_lag(e) for e in events if e.status != "cancelled"])
    loop = p99(loop_lags)
    sched, sent = samples(events, origin="schedule"), samples(events, origin="send")
    client_bound = lag > lag_bound_s or loop > max(lag_bound_s, LOOP_SHARE * _median(sent["ttft"]))
    found = checks(limits, events)
    return StepFigures(
        label=label,
        rate=rate,
        concurrency=concurrency,
        sent=len(events),
        good=len(good),
        errors=dict(Counter(e.status for e in events if e.status != "ok")),
        first_errors=tuple(e.error for e in events if e.error)[:FIRST_ERRORS],
        duration_s=duration,
        throughput_rps=len(good) / duration,
        output_tps=sum(tokens) / duration,
        mean_output_tokens=sum(tokens) / len(tokens) if tokens else 0.0,
        token_discrepancy=sum(
            abs(e.usage_count - e.local_count) for e in good if e.usage_count is not None
        ),
        from_schedule={k: quantiles(sched[k]) for k in ("ttft", "e2e")},
        from_send={k: quantiles(sent[k]) for k in ("ttft", "e2e")},
        per_token={k: quantiles(sched[k]) for k in ("tpot", "itl", "icl")},
        dispatch_lag_p99_s=lag,
        loop_lag_p99_s=loop,
        client_bound=client_bound,
        saturated=saturated,
        checks=found,
        decision=decide(found, client_bound),
    )


def windows(events: Sequence[RequestEvent], window_s: float) -> tuple[ServeWindow, ...]:
    """A soak's requests in windows of ``window_s`` by their due time, each with its
    median E2E from the schedule (a request not good counts as over every value, so a
    window where half or more were not good has no median)."""
    if not events:
        return ()
    start = min(e.scheduled_ns for e in events)
    slots: dict[int, list[RequestEvent]] = {}
    for e in events:
        slots.setdefault(int((e.scheduled_ns - start) * NS // window_s), []).append(e)
    out = []
    for w in range(max(slots) + 1):
        got = slots.get(w, [])
        if not got:  # a rate below one request a window
            continue
        values = [
            (e.end_ns - e.scheduled_ns) * NS
            if e.status == "ok" and e.end_ns is not None
            else math.inf
            for e in got
        ]
        mid = statistics.median(values)
        out.append(
            ServeWindow(
                t_s=(w + 1) * window_s,
                sent=len(got),
                good=sum(e.status == "ok" for e in got),
                median_e2e_s=mid if math.isfinite(mid) else None,
            )
        )
    return tuple(out)
