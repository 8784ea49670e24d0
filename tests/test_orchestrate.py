"""The orchestrator's adaptive stop on given samples (no worker processes)."""

from __future__ import annotations

import numpy as np

from parity.model.side import MeasurePlan as Plan
from parity.model.side import Stop
from parity.orchestrate import Samples
from parity.orchestrate import decide_stop as _decide


def _samples(rounds: int, seed: int = 0) -> Samples:
    """Steady steps per role and round: 1% step noise, processes 0.1% apart (precise)."""
    rng = np.random.default_rng(seed)
    return {
        role: [
            list(scale * np.exp(rng.normal(0, 0.001) + rng.normal(0, 0.01, 100)))
            for _ in range(rounds)
        ]
        for role, scale in (("baseline", 1e-3), ("target", 1.2e-3))
    }


def test_a_precise_but_provisional_interval_does_not_stop_measuring() -> None:
    plan = Plan(precision=0.05, budget_s=100.0)
    assert _decide(plan, _samples(2), 2, elapsed=10.0, failed=False) is None
    stop = _decide(plan, _samples(3), 3, elapsed=15.0, failed=False)
    assert stop is not None and stop.reason == "precision"


def test_the_budget_ends_a_provisional_interval_and_says_so() -> None:
    stop = _decide(Plan(precision=0.05, budget_s=12.0), _samples(2), 2, elapsed=10.0, failed=False)
    assert stop is not None and stop.reason == "budget"
    assert "provisional" in stop.message


def test_fixed_repeats_and_failures_end_as_before() -> None:
    assert _decide(Plan(repeats=2), _samples(2), 2, elapsed=1.0, failed=False) == Stop(
        reason="repeats", message="2 repeat(s) per side, as asked"
    )
    failure = _decide(Plan(), _samples(1), 1, elapsed=1.0, failed=True)
    assert failure is not None and failure.reason == "failure"
