"""The sides' quality runs sized, before they run, for a top-1 gate to decide.

A top-1 gate over every position of every prompt (a generation workload's) decides once
it has :func:`parity.judge.agreement.required_rows` decisive rows (299 at the default
99%); with fewer it is not decided, and the comparison ends NOT DECIDED. The ``freeze``
job foresees the decisive share on the first batch of prompts
(``parity.probes.cost.decisive_rows``). Where the prompts follow ``--steps`` (a
checkpoint, ``--data``) and the user did not give ``--steps``, the comparison runs the
steps whose prompts give the rows it needs with :data:`MARGIN` (the first batch's
share is a sample, and the largest error over more rows is larger), at most
:data:`MOST_TIMES` the workload's own; the budget and the per-process timeout then
hold that run or refuse it before anything runs, as for any run. Where the steps are
the user's, or the rows do not follow them, what the gate will get is said before
measuring, with the ``--steps`` that would decide it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from parity.model.estimate import DecisiveRows, StepCost

#: the decisive rows asked for over the ones the gate needs
MARGIN = 1.25
#: the most steps the sizing asks for, in times the workload's own
MOST_TIMES = 8


def foreseen(rows: DecisiveRows, batches: int | None = None) -> int:
    """The decisive rows ``batches`` batches of prompts give (the run's own by default)."""
    return math.floor(rows.rows_per_batch * rows.share * (batches or rows.batches))


def needed_batches(rows: DecisiveRows, required: int) -> int | None:
    """The batches of prompts that give ``required`` decisive rows with the margin; None
    where no row is foreseen decisive."""
    per_batch = rows.rows_per_batch * rows.share
    return math.ceil(required * MARGIN / per_batch) if per_batch > 0 else None


def sized_steps(cost: StepCost | None, steps: int, required: int) -> int | None:
    """The steps a run of ``steps`` default steps should run instead for its top-1 gate
    to decide; None where it decides as it is, its rows do not follow the steps, or the
    steps it needs are more than :data:`MOST_TIMES` its own (then :func:`short` says)."""
    rows = cost.decisive if cost is not None else None
    if rows is None or not rows.follow_steps or foreseen(rows) >= required * MARGIN:
        return None
    need = needed_batches(rows, required)
    if need is None or need <= steps or need > MOST_TIMES * steps:
        return None
    return need


def rescaled(cost: StepCost, steps: int, sized: int) -> StepCost:
    """``cost`` of a run of ``steps`` for one of ``sized``: the end of a run decodes and
    scores every prompt batch again, one a step."""
    scale = sized / steps
    rows = cost.decisive
    return replace(
        cost,
        finish_steps=round(cost.finish_steps * scale, 3),
        forced_steps=round(cost.forced_steps * scale, 3),
        decisive=replace(rows, batches=sized) if rows is not None else None,
    )


def sized_note(cost: StepCost, steps: int, sized: int, required: int) -> str:
    """What the sizing did, for the first lines and the verdict's notes."""
    rows = cost.decisive
    assert rows is not None
    return (
        f"the top-1 gate over every prompt's positions needs {required} decisive rows; "
        f"{rows.share:.0%} of the first prompts' positions are decisive at these sides' "
        f"precision, so {steps} steps would give about {foreseen(rows, steps)}: running "
        f"{sized} steps (about {foreseen(rows, sized)}); --steps N sets it"
    )


def short(cost: StepCost | None, steps: int, required: int) -> str | None:
    """Where the run's top-1 gate is foreseen short of the rows it needs: a line saying
    so before measuring, with the ``--steps`` that would decide it where the rows follow
    the steps; None where it is not foreseen short."""
    rows = cost.decisive if cost is not None else None
    if rows is None or foreseen(rows) >= required:
        return None
    got = (
        f"the top-1 gate over every prompt's positions is foreseen {foreseen(rows)} "
        f"decisive rows ({rows.share:.0%} of {rows.rows_per_batch * rows.batches}), "
        f"{required} needed: it will likely end NOT DECIDED (exit code 3)"
    )
    need = needed_batches(rows, required)
    if need is None:
        return got + "; no position was decisive on the first prompts"
    if rows.follow_steps:
        return got + f"; about --steps {need} decides it"
    return got + f"; about {need} batches of prompts would decide it"
