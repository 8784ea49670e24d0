"""The client and its metrics against the scripted server's known timing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from parity.model.fair import LatencyLimit
from parity.model.serving import Quantile, StepFigures
from parity.serving.client import Endpoint
from parity.serving.load import ByteTokenizer, build
from parity.serving.step import StepPlan, run_step
from parity.testing.pace import stretch

#: every test here starts a scripted server (a fresh interpreter) with its own timings
pytestmark = pytest.mark.slow

TOK = ByteTokenizer()


def load(requests: int, n_out: int, arrival: str = "constant"):  # type: ignore[no-untyped-def]
    texts = iter(["the quick brown fox jumps over the lazy dog"] * 10_000)
    return build(
        TOK, texts, source="test", arrival=arrival, requests=requests,  # type: ignore[arg-type]
        prompt_tokens=(8, 16), output_tokens=(n_out, n_out),
    )  # fmt: skip


def median(qs: tuple[Quantile, ...]) -> float:
    got = next(q for q in qs if q.percentile == 50).value_s
    assert got is not None
    return got


def p99(qs: tuple[Quantile, ...]) -> float:
    got = next(q for q in qs if q.percentile == 99).value_s
    assert got is not None
    return got


def run(base: str, plan: StepPlan, ld: object, model: str = "scripted") -> StepFigures:
    endpoint = Endpoint(base=base, model=model)
    figures, _ = asyncio.run(run_step(endpoint, ld, TOK, plan))  # type: ignore[arg-type]
    return figures


def test_each_metric_equals_the_script(scripted: Callable[..., str]) -> None:
    """TTFT, E2E, TPOT, ITL per token, ICL per chunk and output tokens with 3-token chunks,
    each within 2% of what the script makes them. The script's times stretch with the
    machine's load, so the client's and the server's late wake-ups stay a small share."""
    pace = stretch()
    ttft, token, k, n = 0.5 * pace, 0.1 * pace, 3, 12
    base = scripted(ttft=ttft, token=token, chunk=k)
    ld = load(6, n)
    f = run(base, StepPlan(label="c1", indices=range(6), concurrency=1), ld)
    e2e = ttft + (n // k - 1) * k * token
    assert f.good == 6 and f.errors == {}
    assert f.mean_output_tokens == n and f.token_discrepancy == 0
    assert median(f.from_send["ttft"]) == pytest.approx(ttft, rel=0.02)
    assert median(f.from_send["e2e"]) == pytest.approx(e2e, rel=0.02)
    assert median(f.per_token["tpot"]) == pytest.approx((e2e - ttft) / (n - 1), rel=0.02)
    assert median(f.per_token["itl"]) == pytest.approx(token, rel=0.02)
    assert median(f.per_token["icl"]) == pytest.approx(k * token, rel=0.02)


def test_a_stall_shows_from_the_schedule_not_from_the_send(scripted: Callable[..., str]) -> None:
    """One client slot (--max-concurrency 1), a server that stalls 1.5 s at request 100 of
    200: the requests due meanwhile wait for the slot, so the stall is in their latency
    from the schedule, and in only one request's latency from the send."""
    base = scripted(ttft=0.02, token=0.005, chunk=1, stall_at=100, stall=1.5)
    ld = load(200, 4)
    plan = StepPlan(label="r", indices=range(200), rate=20.0, max_concurrency=1, lag_bound_s=1)
    f = run(base, plan, ld)
    assert f.good == 200
    assert p99(f.from_schedule["e2e"]) > 1.0
    assert p99(f.from_send["e2e"]) < 0.5


def test_errors_and_dropped_streams_are_not_good(scripted: Callable[..., str]) -> None:
    base = scripted(ttft=0.01, token=0.001, error_every=5, drop_every=7)
    ld = load(35, 4)
    limit = LatencyLimit(metric="e2e", percentile=50, limit_s=5.0)
    plan = StepPlan(label="c4", indices=range(35), concurrency=4, limits=(limit,))
    f = run(base, plan, ld)
    assert f.errors.get("error") == 7
    assert f.errors.get("truncated", 0) >= 4  # the 7th, 14th... arrivals that were not errors
    assert f.good == 35 - sum(f.errors.values())
    assert all("scripted failure" in e or "stream" in e for e in f.first_errors)
    # not good counts as over the limit: 7 + 4 of 35 is not above the median, so it holds
    assert f.checks[0].status == "pass"


def test_too_many_errors_fail_a_limit(scripted: Callable[..., str]) -> None:
    base = scripted(ttft=0.01, token=0.001, error_every=2)
    ld = load(40, 4)
    limit = LatencyLimit(metric="e2e", percentile=90, limit_s=5.0)
    # a busy machine's loop lag is not what this tests (a client-bound step is not decided)
    plan = StepPlan(label="c4", indices=range(40), concurrency=4, limits=(limit,), lag_bound_s=0.5)
    f = run(base, plan, ld)
    assert f.checks[0].status == "fail" and f.decision == "fail", f
    # decided before the end: half not good already puts the p90's lower bound over
    assert f.saturated and f.sent < 40
    assert f.errors == {"error": f.sent - f.good} and abs(f.good - f.sent / 2) <= 2


def test_a_client_past_its_ceiling_is_flagged(scripted: Callable[..., str]) -> None:
    """A no-work server driven far past what the client can send: the dispatch lag gives
    it away, and the step is client-bound, not the server's figure."""
    base = scripted(ttft=0.0, token=0.0)
    ld = load(1500, 2)
    ceiling = run(base, StepPlan(label="c", indices=range(300), concurrency=16), ld)
    rate = 20 * ceiling.throughput_rps
    f = run(base, StepPlan(label="x", indices=range(1500), rate=rate, lag_bound_s=0.025), ld)
    assert f.client_bound and f.decision == "client-bound"
    assert f.dispatch_lag_p99_s > 0.025


def test_a_stream_without_done_is_complete_at_its_finish(scripted: Callable[..., str]) -> None:
    """``transformers serve`` closes the stream after the usage chunk, with no ``[DONE]``:
    a finish reason ends the answer; a stream cut before it is truncated."""
    base = scripted(ttft=0.01, token=0.001, no_done=True, drop_every=3)
    f = run(base, StepPlan(label="c2", indices=range(9), concurrency=2), load(9, 4))
    assert f.good == 6 and f.errors == {"truncated": 3}
