"""A step's figures from events whose stamps are known exactly."""

from __future__ import annotations

import pytest

from parity.model.fair import LatencyLimit
from parity.model.serving import RequestEvent
from parity.serving.metrics import figures

MS = 1_000_000


def event(i: int, ttft_ms: int, *, lag_ms: int = 0, status: str = "ok") -> RequestEvent:
    due = i * 100 * MS
    sent = due + lag_ms * MS
    chunks = tuple(sent + ttft_ms * MS + k * 10 * MS for k in range(5))
    return RequestEvent(
        step="s", index=i, scheduled_ns=due, sent_ns=sent, first_ns=chunks[0],
        end_ns=chunks[-1], chunks_ns=chunks, chunk_sizes=(1,) * 5, usage_count=5,
        local_count=5, status=status,  # type: ignore[arg-type]
    )  # fmt: skip


def step(events: list[RequestEvent], loop_ms: float = 0.0, bound_ms: float = 25.0):  # type: ignore[no-untyped-def]
    limit = LatencyLimit(metric="ttft", percentile=50, limit_s=10.0)
    return figures(events, label="s", rate=10.0, concurrency=None, limits=(limit,),
                   loop_lags=[loop_ms / 1e3] * 100, lag_bound_s=bound_ms / 1e3,
                   saturated=False)  # fmt: skip


def test_exact_figures() -> None:
    f = step([event(i, 200, lag_ms=i) for i in range(20)])
    med = {q.percentile: q for q in f.from_send["ttft"]}[50]
    assert med.value_s == pytest.approx(0.2)
    sched = {q.percentile: q for q in f.from_schedule["ttft"]}[50]
    assert sched.value_s == pytest.approx(0.2095)  # the median of 200 + 0..19 ms
    assert {q.percentile: q for q in f.per_token["tpot"]}[50].value_s == pytest.approx(0.01)
    assert f.dispatch_lag_p99_s == pytest.approx(0.01881)
    assert not f.client_bound and f.decision == "pass"


def test_a_late_send_is_client_bound_whatever_the_answers_take() -> None:
    f = step([event(i, 5000, lag_ms=40) for i in range(20)])
    assert f.client_bound and f.decision == "client-bound"


def test_the_loops_lag_counts_only_against_the_answers_scale() -> None:
    """A 30 ms loop lag is client-bound when answers take 100 ms, not when they take 5 s."""
    assert step([event(i, 100) for i in range(20)], loop_ms=30).client_bound
    assert not step([event(i, 5000) for i in range(20)], loop_ms=30).client_bound


def test_not_good_requests_count_against_a_limit() -> None:
    events = [event(i, 200, status="error" if i < 16 else "ok") for i in range(20)]
    f = step(events)
    assert f.good == 4 and f.errors == {"error": 16}
    # 16 of 20 over the limit: the median's lower bound (the 6th value) is over it
    assert f.checks[0].status == "fail"
