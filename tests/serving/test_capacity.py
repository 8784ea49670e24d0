"""The capacity search against a server whose capacity is known."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from parity.model.fair import LatencyLimit
from parity.model.serving import StepFigures
from parity.serving.capacity import search
from parity.serving.client import Endpoint
from parity.serving.load import ByteTokenizer, build
from parity.serving.step import StepPlan, run_step

TOK = ByteTokenizer()


@pytest.mark.slow
def test_the_highest_rate_within_a_limit_is_the_capacity(scripted: Callable[..., str]) -> None:
    """2 slots of 0.4 s a request (0.1 s to the first token, 6 tokens 0.06 s apart) hold
    5 requests/s; with constant arrivals a faster rate queues without end, a slower one
    never queues, so the highest rate whose E2E p90 stays within 0.6 s is the capacity.
    One search lands within 10% of it."""
    base = scripted(ttft=0.1, token=0.06, slots=2)
    texts = iter(["a b c d e f g h"] * 10_000)
    load = build(TOK, texts, source="test", arrival="constant", requests=60,
                 prompt_tokens=(8, 8), output_tokens=(6, 6))  # fmt: skip
    limit = LatencyLimit(metric="e2e", percentile=90, limit_s=0.6)
    endpoint = Endpoint(base=base, model="scripted")

    def at(rate: float) -> StepFigures:
        plan = StepPlan(label=f"rate={rate:.4g}", indices=range(60), rate=rate, limits=(limit,),
                        lag_bound_s=0.5)  # fmt: skip
        return asyncio.run(run_step(endpoint, load, TOK, plan))[0]

    found = search(at, 2.0, max_steps=9, precision=0.05)
    assert found.rate is not None, found
    assert found.rate == pytest.approx(5.0, rel=0.10), found
    assert found.failed_above is not None and found.failed_above > found.rate


def test_the_search_brackets_then_bisects() -> None:
    """With a step that passes below 7.3/s: doubling from 1 then bisection, to 5%."""
    from parity.model.serving import StepFigures

    seen: list[float] = []

    def at(rate: float) -> StepFigures:
        seen.append(rate)
        return StepFigures(
            label=f"{rate:.4g}", rate=rate, sent=1, good=1, duration_s=1, throughput_rps=1,
            output_tps=1, mean_output_tokens=1, per_token={}, dispatch_lag_p99_s=0,
            loop_lag_p99_s=0, client_bound=False, saturated=False,
            decision="pass" if rate <= 7.3 else "fail",
        )  # fmt: skip

    found = search(at, 1.0)
    assert seen[:4] == [1, 2, 4, 8]
    assert found.stopped == "converged" and found.rate is not None
    assert 7.3 / 1.05 <= found.rate <= 7.3 and found.failed_above is not None
    assert found.failed_above / found.rate <= 1.05
