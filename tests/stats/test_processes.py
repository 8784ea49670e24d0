"""The paired interval over a comparison's rounds (``parity.stats.ratio_ci(paired=True)``):
by hand, when it applies, and its coverage on a machine whose pace drifts and on one whose
does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parity.stats import PAIRED_FROM, Processes, interleaved_order, ratio_ci, t_quantile


def _sides(
    base: list[float], target: list[float], rounds: list[int] | None = None
) -> tuple[Processes, Processes]:
    ks = tuple(rounds if rounds is not None else range(len(base)))
    return (
        Processes(medians=tuple(base), rounds=ks[: len(base)]),
        Processes(medians=tuple(target), rounds=ks[: len(target)]),
    )


def test_the_paired_interval_by_hand() -> None:
    base = [1.00, 1.10, 0.95, 1.30, 1.05, 0.90, 1.20, 1.02, 1.15, 0.98]
    target = [1.21, 1.30, 1.17, 1.60, 1.25, 1.11, 1.43, 1.24, 1.41, 1.18]
    assert len(base) == PAIRED_FROM
    ci = ratio_ci(*_sides(base, target), paired=True)
    d = np.log(target) - np.log(base)
    n = len(d)
    half = t_quantile(0.975, n - 1) * d.std(ddof=1) / math.sqrt(n)
    assert ci.method == "paired t on log per-process medians, round by round"
    assert ci.df == n - 1
    assert ci.rounds_spread == pytest.approx(d.std(ddof=1))
    assert ci.ratio == pytest.approx(math.exp(d.mean()))
    assert (ci.low, ci.high) == (
        pytest.approx(math.exp(d.mean() - half)),
        pytest.approx(math.exp(d.mean() + half)),
    )
    # the same ratio as the independent sides' interval, which the rounds' pace widens
    welch = ratio_ci(*_sides(base, target))
    assert welch.ratio == pytest.approx(ci.ratio) and welch.rounds_spread is None
    assert welch.half_width_rel > 3 * ci.half_width_rel


def test_rounds_pair_by_their_number_not_by_position() -> None:
    base = list(np.exp(np.random.default_rng(2).normal(0, 0.1, PAIRED_FROM)))
    target = [1.5 * m for m in base]
    shuffled = [int(k) for k in np.random.default_rng(5).permutation(PAIRED_FROM)]
    a = Processes(medians=tuple(base[k] for k in shuffled), rounds=tuple(shuffled))
    b = Processes(medians=tuple(target), rounds=tuple(range(PAIRED_FROM)))
    ci = ratio_ci(a, b, paired=True)
    assert ci.rounds_spread == pytest.approx(0.0, abs=1e-12)  # each round exactly 1.5x
    assert ci.ratio == pytest.approx(1.5) and ci.low == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("base_rounds", "target_rounds", "paired"),
    [
        (range(PAIRED_FROM - 1), range(PAIRED_FROM - 1), True),  # too few rounds to pay
        (range(PAIRED_FROM + 1), range(PAIRED_FROM), True),  # a round one side lacks
        ([*range(PAIRED_FROM - 1), PAIRED_FROM], range(PAIRED_FROM), True),  # other rounds
        (None, range(PAIRED_FROM), True),  # rounds not known
        (range(PAIRED_FROM), range(PAIRED_FROM), False),  # not asked: not one comparison
    ],
)
def test_the_sides_are_independent_unless_paired_rounds_are_all_there(
    base_rounds: range | list[int] | None, target_rounds: range, paired: bool
) -> None:
    rng = np.random.default_rng(3)

    def side(rounds: range | list[int] | None, scale: float) -> Processes:
        n = len(rounds) if rounds is not None else PAIRED_FROM
        medians = tuple(scale * np.exp(rng.normal(0, 0.05, n)))
        return Processes(medians=medians, rounds=tuple(rounds) if rounds is not None else None)

    ci = ratio_ci(side(base_rounds, 1.0), side(target_rounds, 1.2), paired=paired)
    assert ci.method == "Welch t on log per-process medians" and ci.rounds_spread is None


@pytest.mark.parametrize("rounds", [(0, 1), (0, 0, 1)])
def test_rounds_name_each_process_once(rounds: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="rounds must name each process's round once"):
        Processes(medians=(1.0, 1.1, 1.2), rounds=rounds)


def _coverage(
    rng: np.random.Generator, *, rounds: int, walk: float, own: float, draws: int
) -> tuple[float, float, float]:
    """Share of paired and of independent-sides 95% intervals that hold a true ratio of
    1.25, and the median half-width ratio paired/independent: each process's log median is
    the machine's pace (a random walk of ``walk`` per process in ABBA order) plus its own
    noise ``own``."""
    order = interleaved_order(rounds, ("baseline", "target"))
    truth = 1.25
    held = {"paired": 0, "welch": 0}
    widths = []
    for _ in range(draws):
        pace = np.cumsum(rng.normal(0, walk, len(order))) if walk else np.zeros(len(order))
        noise = rng.normal(0, own, len(order))
        got: dict[str, list[float]] = {"baseline": [0.0] * rounds, "target": [0.0] * rounds}
        for i, (role, k) in enumerate(order):
            scale = truth if role == "target" else 1.0
            got[role][k] = scale * math.exp(pace[i] + noise[i])
        a, b = _sides(got["baseline"], got["target"])
        p, w = ratio_ci(a, b, paired=True), ratio_ci(a, b)
        held["paired"] += p.low <= truth <= p.high
        held["welch"] += w.low <= truth <= w.high
        widths.append(p.half_width_rel / w.half_width_rel)
    return held["paired"] / draws, held["welch"] / draws, float(np.median(widths))


@pytest.mark.parametrize(
    ("rounds", "walk", "widest"),
    [
        (PAIRED_FROM, 0.0, 1.15),  # a steady machine: the paired t's fewer degrees of freedom
        (30, 0.0, 1.05),
        (PAIRED_FROM, 0.04, 0.9),  # a pace wandering 4% a process
        (30, 0.04, 0.6),
    ],
)
def test_the_paired_interval_holds_its_coverage_and_narrows_where_the_pace_drifts(
    rounds: int, walk: float, widest: float
) -> None:
    """Seeded simulation, 1,500 comparisons a setting: the paired interval covers 1.25 at
    about its nominal 95% whether or not the pace drifts (the independent-sides interval,
    which counts the drift in each side's spread, over-covers where it does)."""
    rng = np.random.default_rng([rounds, int(walk * 100)])
    paired, welch, width = _coverage(rng, rounds=rounds, walk=walk, own=0.05, draws=1500)
    assert 0.93 <= paired <= 0.97, paired
    assert welch >= 0.93, welch
    assert width < widest, width  # the median of paired/independent half-widths
    if walk:
        assert welch > 0.975, welch
