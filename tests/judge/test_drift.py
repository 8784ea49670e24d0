"""A drift gate: a slope with its interval against a bound, said by the view."""

from __future__ import annotations

from parity.judge.drift import slope_gate
from parity.report import words

X = [float(i) for i in range(20)]


def test_a_flat_series_passes_and_says_its_slope_within_the_bound() -> None:
    g = slope_gate("drift", X, [1.0 + 0.001 * (i % 3) for i in range(20)], 1.0, 0.5, "u/s")
    assert g.passed and g.figure.conclusive and g.detail is None
    said = words.slope(g)
    assert said.startswith("+") and said.endswith(", bound 0.5") and "[95% " in said


def test_a_steep_series_fails_beyond_the_bound() -> None:
    g = slope_gate("drift", X, [2.0 * x + 0.01 * (i % 2) for i, x in enumerate(X)], 1.0, 0.5, "u/s")
    assert not g.passed
    assert words.slope(g).endswith(": beyond the bound")


def test_an_interval_reaching_past_the_bound_is_not_excluded() -> None:
    noisy = [0.4 * x + (3.0 if i % 2 else -3.0) for i, x in enumerate(X)]
    g = slope_gate("drift", X, noisy, 1.0, 0.5, "u/s")
    assert g.passed and not g.figure.conclusive
    assert words.slope(g).endswith(": not excluded (run longer)")


def test_too_few_points_fail_and_say_so() -> None:
    g = slope_gate("drift", [0.0], [1.0], 1.0, 0.5, "u/s")
    assert not g.passed and words.slope(g) == "too few points for a slope"
