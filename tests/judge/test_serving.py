"""The serving judge: agreement token by token, cost at the highest rate, outcome codes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from parity.judge.serving import SideFacts, agreement, judge, logprob_deltas, soak
from parity.model.inputs import Price
from parity.model.serving import Capacity, Logprob, ServeSide, ServeWindow, StepFigures


def step(rate: float, tokens: float = 100.0) -> StepFigures:
    return StepFigures(
        label=f"rate={rate:.4g}", rate=rate, sent=10, good=10, duration_s=1, throughput_rps=rate,
        output_tps=rate * tokens, mean_output_tokens=tokens, per_token={}, dispatch_lag_p99_s=0,
        loop_lag_p99_s=0, client_bound=False, saturated=False, decision="pass",
    )  # fmt: skip


def side(role: str, rate: float | None, outputs: dict[int, tuple[int, ...]]) -> SideFacts:
    cap = Capacity(rate=rate, failed_above=None, steps=(), stopped="converged")
    s = ServeSide(role=role, url="http://h", api_path="/v1/completions", model="m",  # type: ignore[arg-type]
                  prompt_form="ids", capacity=cap)  # fmt: skip
    steps = (step(rate),) if rate else ()
    return SideFacts(side=s, fingerprint="f", steps=steps, outputs={"c1": outputs})


def test_agreement_names_the_first_difference() -> None:
    got = agreement("c1", {0: (1, 2, 3), 1: (4, 5, 6), 2: (7,)}, {0: (1, 2, 3), 1: (4, 9, 6)})
    assert (got.prompts, got.exact, got.tokens) == (2, 1, 6)
    assert got.first_divergence == (1, 1, 5, 9)


def scored(
    *pairs: tuple[str, float], top: tuple[tuple[str, float], ...] = ()
) -> tuple[Logprob, ...]:
    return tuple(Logprob(piece=p, logprob=lp, top=top) for p, lp in pairs)


def test_logprob_deltas_over_the_agreeing_prefix_and_at_the_first_difference() -> None:
    base = {
        0: scored(("a", -0.1), ("b", -0.2)),
        1: scored(("c", -0.5), ("d", -1.0), top=(("e", -1.1),)),
    }
    target = {
        0: scored(("a", -0.15), ("b", -0.2)),
        1: scored(("c", -0.8), ("e", -0.9), top=(("x", -2.0),)),
    }
    got = logprob_deltas(base, target)
    assert got is not None and (got.prompts, got.tokens) == (2, 3)
    assert got.mean_abs == pytest.approx((0.05 + 0.0 + 0.3) / 3)
    assert got.max_abs == pytest.approx(0.3)
    at = got.at_divergence
    assert at is not None and (at.prompt, at.position) == (1, 1)
    assert (at.baseline_piece, at.target_piece) == ("d", "e")
    assert at.baseline_logprob == pytest.approx(-1.0) and at.target_logprob == pytest.approx(-0.9)
    assert at.baseline_of_target == pytest.approx(-1.1)  # listed by the baseline
    assert at.target_of_baseline is None  # not in the target's list
    assert logprob_deltas(base, {}) is None


def test_a_side_without_logprobs_is_named() -> None:
    same = {0: (1, 2)}
    lp = {0: scored(("a", -0.1))}
    got = agreement("c1", same, same, {"baseline": lp, "target": {}})
    assert got.logprobs is None and got.logprobs_absent == ("target",)
    both = agreement("c1", same, same, {"baseline": lp, "target": lp})
    assert both.logprobs is not None and both.logprobs.max_abs == 0 and not both.logprobs_absent


def test_cost_and_break_even() -> None:
    same = {0: (1, 2)}
    v = judge(
        {"baseline": side("baseline", 10.0, same), "target": side("target", 20.0, same)},
        limits=(("e2e_p90", 1.0),), min_match=1.0,
        prices={"baseline": Price(usd_per_hour=3.6), "target": Price(usd_per_hour=3.6)},
    )  # fmt: skip
    assert v.outcome == "pass" and v.ratio == pytest.approx(2.0)
    assert v.cost is not None and v.cost.baseline is not None and v.cost.target is not None
    assert v.cost.baseline.per_1k_requests == pytest.approx(0.1)  # 3.6 $/h / 36000 req/h
    assert v.cost.baseline.per_1m_output_tokens == pytest.approx(1.0)  # 100 tokens a request
    assert v.cost.target.per_1k_requests == pytest.approx(0.05)
    assert v.cost.break_even_usd_per_hour == pytest.approx(7.2)


@pytest.mark.parametrize(
    ("base_rate", "target_rate", "target_out", "outcome", "code"),
    [
        (10.0, 5.0, {0: (1, 9)}, "fail", "quality-differs"),
        (10.0, None, {0: (1, 2)}, "fail", "target-holds-no-rate"),
        (None, None, {0: (1, 2)}, "inconclusive", "no-rate-passed"),
    ],
)
def test_outcomes(
    base_rate: float | None, target_rate: float | None, target_out: dict[int, tuple[int, ...]],
    outcome: str, code: str,
) -> None:  # fmt: skip
    v = judge(
        {"baseline": side("baseline", base_rate, {0: (1, 2)}),
         "target": side("target", target_rate, target_out)},
        limits=(("e2e_p90", 1.0),), min_match=1.0, prices={},
    )  # fmt: skip
    assert v.outcome == outcome and code in v.codes


def soaked(medians: list[float | None], decision: str = "pass") -> SideFacts:
    """A target that soaked 100 s at 5 req/s, one window a second."""
    f = side("target", 5.0, {0: (1,)})
    windows = tuple(
        ServeWindow(t_s=i + 1.0, sent=5, good=5 if m is not None else 1, median_e2e_s=m)
        for i, m in enumerate(medians)
    )
    run = replace(step(5.0), label="soak", decision=decision)  # type: ignore[arg-type]
    return replace(
        f, side=replace(f.side, soak_s=100.0), steps=(*f.steps, run), soak_windows=windows
    )


def test_a_flat_soak_holds_and_ticks_sustained_load() -> None:
    flat = [1.0 + 0.01 * ((i * 7) % 5 - 2) for i in range(100)]  # within 2%, no trend
    got = soak(soaked(flat), max_drift=50.0)  # 50/h: what 100 s can exclude
    assert got is not None and got.passed and got.conclusive
    assert got.warmup_s == pytest.approx(10.0) and got.drift.figure.n == 90
    v = judge({"baseline": side("baseline", 5.0, {0: (1,)}), "target": soaked(flat)},
              limits=(("e2e_p90", 2.0),), min_match=1.0, prices={}, max_drift=50.0)  # fmt: skip
    assert v.outcome == "pass" and v.unproven[0].item == "sustained load" and v.unproven[0].checked
    # the same 100 s cannot exclude 10% an hour: not proven, and the verdict says so
    short = judge({"baseline": side("baseline", 5.0, {0: (1,)}), "target": soaked(flat)},
                  limits=(("e2e_p90", 2.0),), min_match=1.0, prices={}, max_drift=0.1)  # fmt: skip
    assert short.outcome == "inconclusive" and "soak-inconclusive" in short.codes
    assert not short.unproven[0].checked


def test_a_growing_soak_fails() -> None:
    growing = [1.0 + 0.01 * i for i in range(100)]  # +1% of the start a second: 36/h
    got = soak(soaked(growing), max_drift=5.0)
    assert got is not None and not got.passed and got.conclusive
    assert got.drift.figure.low is not None and got.drift.figure.low > 5.0
    v = judge({"baseline": side("baseline", 5.0, {0: (1,)}), "target": soaked(growing)},
              limits=(("e2e_p90", 2.0),), min_match=1.0, prices={}, max_drift=5.0)  # fmt: skip
    assert v.outcome == "fail" and "soak-fails" in v.codes


def test_windows_mostly_not_good_or_a_failed_limit_fail_the_soak() -> None:
    flat: list[float | None] = [1.0] * 100
    flat[50] = None
    got = soak(soaked(flat), max_drift=50.0)
    assert got is not None and got.failed_windows == 1 and not got.passed and got.conclusive
    limit = soak(soaked([1.0] * 100, decision="fail"), max_drift=50.0)
    assert limit is not None and not limit.passed and limit.conclusive
    few = soak(soaked([1.0] * 5), max_drift=50.0)
    assert few is not None and not few.passed and not few.conclusive
    assert soak(side("target", 5.0, {}), max_drift=0.1) is None


def test_the_soak_is_said_by_the_view_as_it_was() -> None:
    """The sustained-load item's evidence and how to check it, and a soak too short for
    a slope, said from the judge's codes and figures."""
    from parity.report import words

    flat = [1.0 + 0.01 * ((i * 7) % 5 - 2) for i in range(100)]
    v = judge({"baseline": side("baseline", 5.0, {0: (1,)}), "target": soaked(flat)},
              limits=(("e2e_p90", 2.0),), min_match=1.0, prices={}, max_drift=50.0)  # fmt: skip
    (item,) = v.unproven
    got = v.soak["target"]
    assert words.unproven_evidence(item) == (
        f"parity serve --soak: the target at 5 req/s for 100 s: latency drift "
        f"{words.slope(got.drift)}; limits pass"
    )
    assert words.how_to_check(item.how_to_check) == (
        "parity serve ... --soak 1h: constant arrivals at each side's highest passing rate, "
        "judged for latency drift"
    )
    few = soak(soaked([1.0] * 5), max_drift=50.0)
    assert few is not None
    assert words.slope(few.drift) == "0 windows after warm-up, at least 8 needed: run longer"
