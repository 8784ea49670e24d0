"""The speed ratio at equal load (``stats.load``), on simulated processes with a known
ratio whose step times follow how long each waited for a core."""

from __future__ import annotations

import numpy as np
import pytest

from parity.stats import ratio_ci
from parity.stats.load import load_adjusted
from parity.stats.processes import Processes

TRUTH = 1.20


def _sides(
    rng: np.random.Generator, gap: float, n: int = 5, slope: float = 1.5
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """``n`` processes a side, 2% apart; each waited 0.2-0.3 s a second, the target's
    ``gap`` more, and its step grew by ``exp(slope * wait)``."""
    out = []
    for level, extra in ((1.0, 0.0), (TRUTH, gap)):
        waits = rng.uniform(0.2, 0.3, n) + extra
        steps = level * np.exp(slope * waits + rng.normal(0, 0.02, n))
        out.append(list(zip(steps.tolist(), waits.tolist(), strict=True)))
    return out[0], out[1]


def test_the_ratio_at_equal_load_holds_the_truth_where_the_plain_one_does_not() -> None:
    """The target's processes waited 0.15 s a second more: the plain ratio reads about
    1.2 x exp(1.5 x 0.15) = 1.50; the adjusted interval holds 1.20 at about its nominal
    95%, the plain one almost never."""
    rng = np.random.default_rng(52)
    held = plain = 0
    draws = 400
    for _ in range(draws):
        a, b = _sides(rng, gap=0.15)
        adj = load_adjusted(a, b)
        assert adj is not None
        held += adj.low <= TRUTH <= adj.high
        ci = ratio_ci(Processes(medians=[m for m, _ in a]), Processes(medians=[m for m, _ in b]))
        plain += ci.low <= TRUTH <= ci.high
        assert adj.shift == pytest.approx(ci.ratio / adj.ratio, rel=1e-9)
    assert held / draws >= 0.90, held
    assert plain / draws <= 0.05, plain


def test_sides_that_waited_alike_keep_their_coverage() -> None:
    """With no load difference planted, the adjustment only takes out the chance
    difference of the sides' waits: its interval holds the truth as often as asked."""
    rng = np.random.default_rng(7)
    held = 0
    for _ in range(300):
        a, b = _sides(rng, gap=0.0)
        adj = load_adjusted(a, b)
        assert adj is not None
        held += adj.low <= TRUTH <= adj.high
    assert held / 300 >= 0.90, held


def test_too_few_processes_or_one_wait_fit_no_slope() -> None:
    one = [(1.0, 0.2), (1.1, 0.2), (0.9, 0.2)]
    assert load_adjusted(one, [(1.2, 0.3), (1.3, 0.3), (1.1, 0.3)]) is None  # no spread
    assert load_adjusted(one[:2], one) is None
    with pytest.raises(ValueError, match="positive finite"):
        load_adjusted(one, [(0.0, 0.1), *one[:2]])
