"""A change of the machine's pace in a comparison's run order (``parity.stats.pace``):
found where both sides shift together, or where the ratio itself moves (one side's
processes shift alone), quiet on a steady machine however noisy."""

from __future__ import annotations

import numpy as np
import pytest

from parity.stats import interleaved_order
from parity.stats.pace import MIN_SHIFT, any_change, pace_change, ratio_change


def _order(
    rounds: int,
    rng: np.random.Generator,
    *,
    noise: float = 0.03,
    shift_at: int | None = None,
    shifts: tuple[float, float] = (1.0, 1.0),
    heavy: bool = False,
    walk: float = 0.0,
) -> list[tuple[str, float]]:
    """Processes in ABBA order (baseline 6 ms, target 9.9 ms), log-normal noise (or
    Student t with 3 degrees of freedom), the sides' step times multiplied by ``shifts``
    from index ``shift_at`` of the order on; ``walk``: a pace both sides share, a random
    walk with steps of that log standard deviation from one process to the next."""
    base = {"baseline": 6e-3, "target": 9.9e-3}
    scale = {"baseline": shifts[0], "target": shifts[1]}
    out = []
    pace = 0.0
    for i, (role, _) in enumerate(interleaved_order(rounds, ("baseline", "target"))):
        pace += rng.normal(0, walk) if walk else 0.0
        e = pace + (rng.standard_t(3) * noise if heavy else rng.normal(0, noise))
        later = shift_at is not None and i >= shift_at
        out.append((role, base[role] * (scale[role] if later else 1.0) * float(np.exp(e))))
    return out


def test_a_shift_of_both_sides_is_found_where_it_was_planted_with_each_part_s_ratio() -> None:
    rng = np.random.default_rng(7)
    for at in (14, 30, 44):
        order = _order(30, rng, shift_at=at, shifts=(1.62, 1.35))
        change = pace_change(order)
        assert change is not None
        assert abs(change.at - at) <= 2
        assert change.baseline_shift == pytest.approx(1.62, rel=0.05)
        assert change.target_shift == pytest.approx(1.35, rel=0.05)
        assert change.ratio_before == pytest.approx(9.9 / 6, rel=0.05)
        assert change.ratio_after == pytest.approx(9.9 / 6 * 1.35 / 1.62, rel=0.05)
        assert change.before + change.after <= 30
        assert change.shared and any_change(order) == change


@pytest.mark.parametrize("heavy", [False, True])
def test_a_steady_machine_shows_no_change_in_200_comparisons(heavy: bool) -> None:
    """At 5% between processes (log-normal, or Student t with 3 degrees of freedom, whose
    tails reach far past the normal's), 30 a side: fewer than 1 in 200 flagged."""
    rng = np.random.default_rng(11)
    flagged = sum(
        pace_change(_order(30, rng, noise=0.05, heavy=heavy)) is not None for _ in range(200)
    )
    assert flagged <= 1, flagged


def test_one_side_shifting_alone_or_a_small_shift_is_not_the_machine() -> None:
    rng = np.random.default_rng(3)
    assert pace_change(_order(30, rng, shift_at=30, shifts=(1.0, 1.5))) is None  # the target's own
    small = 1 + MIN_SHIFT / 2
    assert pace_change(_order(30, rng, noise=0.005, shift_at=30, shifts=(small, small))) is None
    opposite = pace_change(_order(30, rng, shift_at=30, shifts=(1.5, 1 / 1.5)))
    assert opposite is None  # not both the same way
    assert pace_change(_order(2, rng, shift_at=2, shifts=(2.0, 2.0))) is None  # too few a part


def test_a_median_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="not a positive number"):
        pace_change([("baseline", 0.0), ("target", 1.0)])


def test_one_side_shifting_alone_is_a_change_of_the_ratio_found_where_planted() -> None:
    """As seen with the CPU's bf16 units off: the float32 baseline went from 6 to 10 ms
    while the emulated bf16 target held, so the ratio went from 1.65 to 0.99 here."""
    rng = np.random.default_rng(5)
    for at, shifts in ((14, (1.65, 1.0)), (30, (1.0, 1 / 1.4)), (44, (1.3, 1 / 1.3))):
        order = _order(30, rng, shift_at=at, shifts=shifts)
        change = ratio_change(order)
        assert change is not None
        assert abs(change.at - at) <= 2
        assert change.baseline_shift == pytest.approx(shifts[0], rel=0.05)
        assert change.target_shift == pytest.approx(shifts[1], rel=0.05)
        assert change.ratio_before == pytest.approx(9.9 / 6, rel=0.05)
        assert change.ratio_after == pytest.approx(9.9 / 6 * shifts[1] / shifts[0], rel=0.05)
        assert not change.shared and any_change(order) == change  # no shared pace to find


def test_a_shift_both_sides_share_is_no_change_of_the_ratio() -> None:
    rng = np.random.default_rng(9)
    assert ratio_change(_order(30, rng, shift_at=30, shifts=(1.6, 1.6))) is None
    small = 1 + MIN_SHIFT / 2  # under the smallest shift, however clear
    assert ratio_change(_order(30, rng, noise=0.005, shift_at=30, shifts=(small, 1.0))) is None
    assert ratio_change(_order(2, rng, shift_at=2, shifts=(2.0, 1.0))) is None  # too few a part


@pytest.mark.parametrize(("heavy", "walk"), [(False, 0.0), (True, 0.0), (False, 0.03)])
def test_a_steady_ratio_shows_no_change_in_200_comparisons(heavy: bool, walk: float) -> None:
    """At 5% between processes (log-normal or Student t with 3 degrees of freedom), or
    with a pace that drifts as this machine's does (a shared random walk of 3% a process),
    30 a side: at most 2 in 200 flagged."""
    rng = np.random.default_rng(13)
    flagged = sum(
        ratio_change(_order(30, rng, noise=0.05, heavy=heavy, walk=walk)) is not None
        for _ in range(200)
    )
    assert flagged <= 2, flagged
