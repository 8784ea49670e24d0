"""When to stop measuring, and the order to measure in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from parity.stats.processes import MIN_PROCESSES, RatioCI

StopReason = Literal["precision", "budget", "max_repeats"]


@dataclass(frozen=True, kw_only=True, slots=True)
class StopDecision:
    """Why measuring stopped, with a sentence for the report."""

    reason: StopReason
    message: str


def fits(spent_s: float, next_s: float, budget_s: float, reserve_s: float = 0.0) -> bool:
    """Whether what is next (``next_s``) fits in a budget of ``budget_s`` after
    ``spent_s``, with ``reserve_s`` still to spend after it: the one test of the budget
    (``parity.measure.budget``: before, during and after the rounds)."""
    return spent_s + next_s + reserve_s <= budget_s


def should_stop(
    ci: RatioCI,
    *,
    precision: float,
    elapsed_s: float,
    budget_s: float,
    repeats: int,
    min_repeats: int = 2,
    max_repeats: int = 30,
    settle_from: int | None = None,
    decisive: float = 0.05,
    next_repeat_s: float | None = None,
    reserve_s: float = 0.0,
) -> StopDecision | None:
    """Decide after each repeat (per side) whether to stop measuring; None: keep going.

    Checked in order: ``"precision"`` when at least ``min_repeats`` repeats gave an
    interval that is not provisional (see :data:`MIN_PROCESSES`) and whose half width is
    at most ``precision`` of the ratio; ``"max_repeats"`` at
    ``max_repeats``, or from ``settle_from`` repeats on (the repeat cap, where the
    caller allows more for an interval still wide) once the interval is within
    ``decisive``; ``"budget"`` when another repeat would overrun ``budget_s`` with
    ``reserve_s`` still to spend after the repeats (e.g. compliance runs). A repeat costs
    ``next_repeat_s`` where the caller knows it (the slowest round so far), else the
    mean so far (``elapsed_s / repeats``). The budget wins over ``min_repeats``: it is a
    hard limit.
    """
    if not precision > 0:
        raise ValueError(f"precision must be greater than 0 (got {precision}).")
    if not budget_s > 0:
        raise ValueError(f"budget_s must be greater than 0 (got {budget_s}).")
    if not 1 <= min_repeats <= max_repeats:
        raise ValueError(
            f"need 1 <= min_repeats <= max_repeats (got {min_repeats} and {max_repeats})."
        )
    settle = max_repeats if settle_from is None else settle_from
    if not min_repeats <= settle <= max_repeats:
        raise ValueError(
            f"need min_repeats <= settle_from <= max_repeats (got {settle_from} and {max_repeats})."
        )
    width = ci.half_width_rel
    got = f"±{width:.1%} at {ci.confidence:.0%} confidence after {repeats} repeat(s)"
    if repeats >= min_repeats and not ci.provisional and width <= precision:
        return StopDecision(
            reason="precision", message=f"precision reached: {got} (asked ±{precision:.1%})"
        )
    settled = repeats >= settle and not ci.provisional and width <= decisive
    if repeats >= max_repeats or settled:
        return _capped(repeats, settle, decisive, got, precision)
    if next_repeat_s is None:
        next_repeat_s = elapsed_s / repeats if repeats > 0 else 0.0
    if not fits(elapsed_s, next_repeat_s, budget_s, reserve_s):
        short = "" if repeats >= min_repeats else f" (fewer than the {min_repeats} wanted)"
        if ci.provisional:
            short += (
                f" (provisional: fewer than {MIN_PROCESSES} processes per side leave their "
                "spread unknown)"
            )
        kept = f", {reserve_s:.0f} s kept for the runs after" if reserve_s >= 0.5 else ""
        return StopDecision(
            reason="budget",
            message=(
                f"time budget spent ({elapsed_s:.0f} s of {budget_s:.0f} s{kept}, another "
                f"repeat would not fit) with {got}{short}; raise the budget for a tighter "
                "interval"
            ),
        )
    return None


def _capped(repeats: int, settle: int, decisive: float, got: str, precision: float) -> StopDecision:
    """The stop at the repeat cap (``settle``), or past it at the interval's ``decisive``
    width or the wide cap."""
    past = (
        ""
        if repeats <= settle
        else f"; rounds past {settle} run only while the interval is wider than ±{decisive:.0%}"
    )
    return StopDecision(
        reason="max_repeats",
        message=(
            f"stopped at the repeat cap ({repeats}{past}) with {got}, wider than the "
            f"±{precision:.1%} asked: the workload is noisier than that precision allows in "
            "as many rounds; a larger budget raises the cap (one round a second of it), or "
            "accept a coarser precision or quiet the machine"
        ),
    )


def interleaved_order(
    repeats: int, sides: Sequence[str] = ("baseline", "target"), *, seed: int | None = None
) -> list[tuple[str, int]]:
    """Run order ``[(side, repeat_index), ...]`` in ABBA alternation: A B B A A B B A ...

    Round ``k`` runs every side once, in order for even ``k`` and reversed for odd ``k``.
    Under linear drift (the machine heats up, a background job ramps) each side's mean
    position in time is then the same over every pair of rounds, so the drift adds the
    same to both sides and cancels from the ratio; plain A B A B would charge B one
    slot's drift per round. With ``repeats`` odd, one round's imbalance is left. A seed
    shuffles the side order of round 0 (which side starts); the alternation and the
    balance (``repeats`` runs per side) are kept.
    """
    if repeats < 0:
        raise ValueError(f"repeats must be 0 or greater (got {repeats}).")
    order = list(sides)
    if not order or len(set(order)) != len(order):
        raise ValueError(f"sides must be distinct and non-empty (got {order}).")
    if seed is not None:
        order = [order[i] for i in np.random.default_rng(seed).permutation(len(order))]
    out: list[tuple[str, int]] = []
    for k in range(repeats):
        out.extend((side, k) for side in (order if k % 2 == 0 else order[::-1]))
    return out
