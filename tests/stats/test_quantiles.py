"""Order-statistic bounds on a quantile: they agree with the SLO gate's, and they cover."""

from __future__ import annotations

import random

import pytest

from parity.judge.slo import upper_bound
from parity.stats.quantiles import lower_rank, quantile_interval, upper_rank


@pytest.mark.parametrize("n", [5, 29, 100, 299, 1000])
@pytest.mark.parametrize("p", [50, 90, 99])
def test_the_upper_bound_is_the_slo_gates(n: int, p: int) -> None:
    xs = [random.Random(n + p).random() for _ in range(n)]
    got = quantile_interval(xs, p / 100)
    assert got is not None and got.upper == upper_bound(xs, p)


def test_too_few_samples_have_no_bound() -> None:
    assert upper_rank(298, 0.99) is None and upper_rank(299, 0.99) == 299
    assert lower_rank(4, 0.5) is None and lower_rank(5, 0.5) == 1


def test_the_bounds_cover_the_true_quantile() -> None:
    """Each one-sided bound misses the true median of U(0,1) about 5% of the time or less."""
    rng = random.Random(0)
    trials, up_miss, low_miss = 2000, 0, 0
    for _ in range(trials):
        got = quantile_interval([rng.random() for _ in range(40)], 0.5)
        assert got is not None and got.lower is not None and got.upper is not None
        up_miss += got.upper < 0.5
        low_miss += got.lower > 0.5
    assert up_miss / trials < 0.06 and low_miss / trials < 0.06
    assert up_miss / trials > 0.01 and low_miss / trials > 0.01
