"""Two placements of a side's threads: the split of the handoff figures, the sides' steps in
each, and no split where the figures do not part or nothing moved with them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parity.stats.handoff import Process, split_at, two_placements

QUICK, SLOW = 6200.0, 8600.0  # ns: the two placements measured on this project's machine


def _run(
    rng: np.random.Generator,
    slow_rounds: set[int],
    *,
    rounds: int = 30,
    base: tuple[float, float] = (6.2e-3, 10.0e-3),
    target: tuple[float, float] = (9.7e-3, 13.0e-3),
    noise: float = 0.03,
) -> list[Process]:
    """Rounds of one baseline and one target process; in ``slow_rounds`` the host's slow
    placement (its handoff figure, and each side's step from the second of its pair)."""
    out: list[Process] = []
    for k in range(rounds):
        slow = k in slow_rounds
        for role, (fast_s, slow_s) in (("baseline", base), ("target", target)):
            step = (slow_s if slow else fast_s) * math.exp(rng.normal(0, noise))
            figure = (SLOW if slow else QUICK) * math.exp(rng.normal(0, 0.015))
            out.append((role, step, figure))
    return out


def test_two_placements_are_found_with_each_ones_ratio() -> None:
    rng = np.random.default_rng(3)
    found = two_placements(_run(rng, set(range(0, 10)) | {14, 15}))
    assert found is not None
    assert (found.quick, found.slow) == (36, 24)
    assert found.quick_ns == pytest.approx(QUICK, rel=0.03)
    assert found.slow_ns == pytest.approx(SLOW, rel=0.03)
    assert found.baseline_shift == pytest.approx(10.0 / 6.2, rel=0.05)
    assert found.target_shift == pytest.approx(13.0 / 9.7, rel=0.05)
    assert found.quick_ratio is not None and found.slow_ratio is not None
    assert found.quick_ratio.low < 9.7 / 6.2 < found.quick_ratio.high
    assert found.slow_ratio.low < 13.0 / 10.0 < found.slow_ratio.high


def test_one_placement_is_no_split() -> None:
    rng = np.random.default_rng(4)
    assert two_placements(_run(rng, set())) is None
    assert two_placements(_run(rng, set(range(30)))) is None


def test_two_placements_that_move_no_side_are_not_said() -> None:
    rng = np.random.default_rng(5)
    same = _run(rng, set(range(12)), base=(6.2e-3, 6.2e-3), target=(9.7e-3, 9.7e-3))
    assert split_at([h for _, _, h in same]) is not None
    assert two_placements(same) is None


def test_too_few_in_a_placement_is_no_split() -> None:
    rng = np.random.default_rng(6)
    one_round = _run(rng, {7})  # two processes in the slow placement, MIN_GROUP is 3
    assert split_at([h for _, _, h in one_round]) is None


@pytest.mark.parametrize("tail", ["normal", "student-t3", "loaded"])
def test_figures_from_one_placement_seldom_split(tail: str) -> None:
    """One placement's figures, however they scatter, part in two in under 1 in 100 runs
    of 60 processes (heavy tails, and a loaded machine's figures spread over 10x)."""
    rng = np.random.default_rng(7)
    splits = 0
    for _ in range(1000):
        if tail == "normal":
            logs = rng.normal(0, 0.03, 60)
        elif tail == "student-t3":
            logs = 0.03 * rng.standard_t(3, 60)
        else:
            logs = rng.uniform(0, math.log(10), 60)
        splits += split_at(list(QUICK * np.exp(logs))) is not None
    assert splits <= 10, splits


def test_a_few_figures_taken_while_the_host_moved_the_cores_do_not_hide_the_split() -> None:
    """One comparison here: 114 figures at 6.1-6.6 or 8.5-9.2 µs, and 7 more at 6.9-11.1
    µs (processes that ran while the host moved the cores); the gap-only rule this
    replaced found no split in it, and the steps had moved 1.6x with the placement."""
    rng = np.random.default_rng(9)
    run = _run(rng, set(range(10, 16)) | set(range(50, 57)), rounds=57)
    odd = [6900.0, 7100.0, 7300.0, 7600.0, 10400.0, 10800.0, 11100.0]
    for i, figure in zip(range(3, 60, 8), odd, strict=False):
        role, step, _ = run[i]
        run[i] = (role, step, figure)
    found = two_placements(run)
    assert found is not None and found.baseline_shift == pytest.approx(10.0 / 6.2, rel=0.1)
    assert found.quick + found.slow == len(run)
