"""The budget's one cost model: what a process costs, whether the next thing fits in
what is left of ``--budget``, and the ``--budget`` that holds a need.

Used before the rounds (``parity.measure.estimate`` costs each process from the freeze
job's step: ``process_s``), during them (the scheduler costs the next round, the timing
processes and the compliance runs from the processes that ran: ``rerun_s``,
``next_cost``; the rounds stop where the next would not ``fit``) and after them (the
verdict's account of what measuring took against the estimate, and the ``--budget``
its notes ask for: ``holding``). A process is its fixed part (the interpreter's start
where a worker timed it, the workload's load), its steps, and ``OVERHEAD_S`` outside
its timed phases; what is still to run is costed from what ran with ``COST_MARGIN``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from parity.model.bundle import Bundle

#: a process's cost outside its timed phases: the worker's start from the zygote, its
#: writing and exit, the parent's sealing of its bundle (a generous figure: the rounds
#: after the first correct it from what the processes took)
OVERHEAD_S = 0.5
#: margin on what is still to run, costed from what ran (the machine may just have got
#: slower)
COST_MARGIN = 1.2
#: the ``--budget`` a line asks for holds the need with this margin
ASK_MARGIN = 1.25

__all__ = [
    "ASK_MARGIN",
    "COST_MARGIN",
    "OVERHEAD_S",
    "fits",
    "holding",
    "left_s",
    "next_cost",
    "plain_run_s",
    "process_s",
    "rerun_s",
]


def process_s(fixed_s: float, steps: float, step_s: float) -> float:
    """A process of ``steps`` steps of ``step_s`` after ``fixed_s`` (its start and load)."""
    return OVERHEAD_S + fixed_s + steps * step_s


def plain_run_s(bundle: Bundle, steps: int | None = None) -> float | None:
    """A run's start, load and steps (what every repeat pays), from its metrics; with
    ``steps``, a timing process of that many steps (its steady steps at the median).
    None where the run failed or timed no start."""
    if not bundle.ok or bundle.metrics is None:
        return None
    p = bundle.metrics.phases
    if p.start_import_s is None:
        return None
    steady = p.steady_s
    if steps is not None and p.steady_steps:
        steady = max(steps - 1 - p.warmup_steps, 0) * p.steady_s / p.steady_steps
    return p.start_import_s + (p.load_s or 0.0) + p.first_step_s + p.warmup_s + steady


def rerun_s(bundle: Bundle, steps: int | None = None) -> float | None:
    """What another process like ``bundle`` (without its first repeat's extras, the
    numerics probe and the op scan; of ``steps`` steps) will cost: its plain run with the
    margin, and the overhead."""
    plain = plain_run_s(bundle, steps)
    return None if plain is None else COST_MARGIN * plain + OVERHEAD_S


def next_cost(costs: Sequence[float]) -> float:
    """What the next of a run of costs will be: the median after the first (which also
    captures numerics and scans ops) with the margin, or the last if higher (0 for none)."""
    if not costs:
        return 0.0
    later = list(costs[1:]) or list(costs)
    return max(COST_MARGIN * statistics.median(later), costs[-1])


def fits(spent_s: float, next_s: float, budget_s: float, reserve_s: float = 0.0) -> bool:
    """Whether ``next_s`` fits in ``budget_s`` after ``spent_s``, with ``reserve_s`` kept
    for what runs after it (``parity.stats.fits``, the test the stopping rule makes)."""
    from parity.stats import fits as within

    return within(spent_s, next_s, budget_s, reserve_s)


def left_s(spent_s: float, budget_s: float) -> float:
    """What is left of ``budget_s`` after ``spent_s`` (none once it is spent)."""
    return max(0.0, budget_s - spent_s)


def holding(need_s: float) -> int:
    """The ``--budget`` that holds ``need_s`` seconds of measuring."""
    return math.ceil(need_s * ASK_MARGIN)
