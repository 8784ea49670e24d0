"""A side's soak against the scripted server: constant arrivals at a rate for a length,
its windows, and the drift judged as ``parity check soak`` judges one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from parity.api.serve import side_facts
from parity.judge.serving import soak
from parity.model.serving import ServeSide, ServeSoak
from parity.report import words
from parity.request.fair_options import parse_slo
from parity.serving.client import Endpoint
from parity.serving.load import ByteTokenizer, build, measured
from parity.serving.side import Settings, soak_plan
from parity.serving.step import run_step

TOK = ByteTokenizer()
RATE, SECONDS = 5.0, 10.0
#: relative per hour: 1% of the median a second, what a 10 s soak can exclude
BOUND = 36.0


def soak_against(base: str, max_drift: float) -> ServeSoak:
    texts = iter(["the quick brown fox jumps over the lazy dog"] * 10_000)
    load = build(TOK, texts, source="test", requests=12, prompt_tokens=(8, 16),
                 output_tokens=(6, 6))  # fmt: skip
    settings = Settings(limits=parse_slo("e2e_p90=5s"), lag_bound_s=0.2, soak_s=SECONDS)
    plan = soak_plan(measured(load), RATE, settings)
    assert len(plan.indices) == RATE * SECONDS and plan.arrival == "constant"
    figures, events = asyncio.run(run_step(Endpoint(base=base, model="scripted"), load, TOK, plan))
    side = ServeSide(role="target", url=base, api_path="/v1/completions", model="scripted",
                     prompt_form="ids", soak_s=SECONDS)  # fmt: skip
    got = soak(side_facts(side, load.fingerprint, [figures], events), max_drift)
    assert got is not None and got.rate == RATE
    assert sum(w.sent for w in got.windows) == RATE * SECONDS
    return got


@pytest.mark.slow
def test_a_steady_server_holds_a_soak(scripted: Callable[..., str]) -> None:
    """10 s of a server that answers in 0.3 s: a drift of 36 an hour (1% of the median a
    second) is excluded."""
    got = soak_against(scripted(ttft=0.1, token=0.04, slots=8), max_drift=BOUND)
    assert got.passed and got.conclusive, words.slope(got.drift)


@pytest.mark.slow
def test_a_server_that_degrades_fails_its_soak(scripted: Callable[..., str]) -> None:
    """The first token 0.1 s later every second: from 0.3 s to 1.3 s over the soak, about
    12% of the median a second, far over the bound of 1%."""
    got = soak_against(scripted(ttft=0.1, token=0.04, slots=8, slow_by=0.1), max_drift=BOUND)
    assert not got.passed and got.conclusive, words.slope(got.drift)
    assert got.drift.figure.low is not None and got.drift.figure.low > BOUND
