"""Latency limits: the order-statistic rule and the checks, on plain samples."""

from __future__ import annotations

import random

import pytest

from parity.judge.slo import check, needed, upper_bound
from parity.model.fair import LatencyLimit
from parity.report import words


def test_the_rule_needs_5_29_and_299_samples() -> None:
    assert (needed(50), needed(90), needed(99)) == (5, 29, 299)
    for p, n in ((50, 5), (90, 29), (99, 299)):
        q = p / 100
        assert 1 - q**n >= 0.95 > 1 - q ** (n - 1)


def test_the_upper_bound_covers_the_true_quantile_about_95_percent_of_the_time() -> None:
    rng = random.Random(1)
    covered = 0
    trials = 400
    for _ in range(trials):
        x = [rng.random() for _ in range(400)]  # uniform: the true p90 is 0.9
        bound = upper_bound(x, 90)
        assert bound is not None
        covered += bound >= 0.9
    assert 0.92 <= covered / trials <= 0.995


def test_too_few_samples_have_no_bound() -> None:
    assert upper_bound([0.1] * 298, 99) is None
    assert upper_bound([0.1] * 299, 99) == pytest.approx(0.1)


def test_within_the_limit_with_enough_samples_passes() -> None:
    c = check(
        LatencyLimit(metric="ttft", percentile=50, limit_s=1.0), [0.01 * i for i in range(1, 41)]
    )
    assert c.status == "pass" and c.n == 40 and c.needed == 5
    assert c.upper_s is not None and c.value_s is not None and c.value_s <= c.upper_s <= 1.0


def test_over_the_limit_fails_with_the_figure() -> None:
    c = check(LatencyLimit(metric="ttft", percentile=99, limit_s=0.001), [0.02] * 40)
    assert c.status == "fail"
    assert "p99 20 ms over 40 samples: over the limit by 20x" in words.slo_check(c)


def test_a_p99_from_too_few_samples_is_unproven_and_names_the_count() -> None:
    c = check(LatencyLimit(metric="e2e", percentile=99, limit_s=10.0), [0.02] * 40)
    assert c.status == "unproven"
    assert "needs at least 299 samples" in words.slo_check(c) and "259 more" in words.slo_check(c)


def test_a_bound_over_the_limit_is_unproven() -> None:
    # 300 samples: the p99 (13 ms) is within 100 ms, but with n this close to 299 the 95%
    # upper bound is the largest sample (600 ms)
    samples = [0.01] * 297 + [0.3, 0.5, 0.6]
    c = check(LatencyLimit(metric="latency", percentile=99, limit_s=0.1), samples)
    assert c.value_s == pytest.approx(0.0129)
    assert c.upper_s == pytest.approx(0.6)
    assert c.status == "unproven" and "upper bound 600 ms is over the limit" in words.slo_check(c)


def test_a_metric_the_side_lacks_is_unmeasured() -> None:
    c = check(LatencyLimit(metric="ttft", percentile=50, limit_s=1.0), [])
    assert c.status == "unmeasured" and "not measured" in words.slo_check(c)


def test_the_curve_names_the_largest_batch_within_every_limit_per_side() -> None:
    import json
    from dataclasses import replace
    from pathlib import Path

    from parity.judge.slo import best_batch
    from parity.model.codec import decode
    from parity.model.fair import Slo, SloSide
    from parity.model.roles import ByRole
    from parity.model.verdict import Verdict
    from parity.report.curve import curve_section

    golden = Path(__file__).parent.parent / "golden" / "verdict-passes.json"
    base = decode(Verdict, json.loads(golden.read_text()))
    limit = LatencyLimit(metric="e2e", percentile=50, limit_s=1.0)

    def point(batch: int, baseline_ok: bool, target_ok: bool) -> tuple[int, Verdict]:
        sides = ByRole(
            baseline=SloSide(checks=(), passed=baseline_ok),
            target=SloSide(checks=(), passed=target_ok),
        )
        return batch, replace(
            base, slo=Slo(limits=(limit,), rule="r", sides=sides, passed=target_ok)
        )

    points = [
        point(1, True, True),
        point(2, True, True),
        point(4, False, True),
        point(8, False, False),
    ]
    best = best_batch(points)
    assert best is not None
    assert (best.baseline.batch_size, best.target.batch_size) == (2, 4)
    rate = base.sides.target.throughput.samples_per_s  # type: ignore[union-attr]
    assert best.target.goodput_per_s == rate
    assert words.curve_best(best.target).startswith("largest batch within every limit: 4 (")
    none = best_batch([point(1, False, False)])
    assert none is not None and none.target.batch_size is None
    assert best_batch([(1, base)]) is None  # no limits: no such line
    texts = [getattr(p, "text", "") for p in curve_section(points).parts]
    assert any(t.startswith("target: largest batch within every limit: 4") for t in texts)
    assert any(t.startswith("baseline: largest batch within every limit: 2") for t in texts)
