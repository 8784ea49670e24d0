"""``side.json``: how much a side was to be measured, and how measuring it ended."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from parity.model.codec import omit_none
from parity.model.estimate import Estimate
from parity.model.job import StepCut, Torchrun

#: rounds at most a side, at the default 30 s budget (``repeat_cap``)
MAX_REPEATS = 30
#: and whatever the budget (a 30-day one would plan millions): a bound on how long the
#: quickest built-in's rounds can go on
MOST_REPEATS = 1000


#: the half width (relative) that decides a difference of 5% either way: past the repeat
#: cap, rounds go on (up to ``WIDE_FACTOR`` times the cap, within the budget) only while
#: the interval is wider than this
DECISIVE = 0.05
WIDE_FACTOR = 4


def repeat_cap(budget_s: float) -> int:
    """The rounds a comparison may run: :data:`MAX_REPEATS`, and one a second of a larger
    budget, up to :data:`MOST_REPEATS`. A fixed cap let a budget larger than the default
    buy nothing more on a quick workload, whose 30 rounds end well within the default
    budget: ``--budget 120`` stopped at the same 30 and the same width."""
    return min(MOST_REPEATS, max(MAX_REPEATS, math.ceil(budget_s)))


def wide_cap(budget_s: float) -> int:
    """The rounds a comparison may run while its interval is wider than :data:`DECISIVE`
    at the repeat cap: :data:`WIDE_FACTOR` times ``repeat_cap``, up to
    :data:`MOST_REPEATS`. A quick workload can reach the cap with much of its budget left
    and its interval still wider than :data:`DECISIVE`: the rest of the budget narrows it."""
    return min(MOST_REPEATS, WIDE_FACTOR * repeat_cap(budget_s))


@dataclass(frozen=True, kw_only=True, slots=True)
class MeasurePlan:
    """How much to measure: fixed repeats, or until a precision or a time budget (each
    read and checked by the option table, ``parity.request.options``)."""

    repeats: int | None = None
    precision: float = 0.02
    budget_s: float = 30.0
    #: the budget was given (--budget, a plan, a keyword): only a given budget refuses a
    #: comparison whose least plan is far over it; the default one cuts and measures
    budget_given: bool = False
    min_repeats: int = 2
    #: at most this many rounds; 0 (the default): ``repeat_cap`` of the budget
    max_repeats: int = 0
    #: and at most this many while the interval is still wider than ``DECISIVE`` after
    #: them: ``wide_cap`` of the budget where ``max_repeats`` is the budget's too; None
    #: with a ``max_repeats`` given: ``max_repeats``, no more
    max_repeats_wide: int | None = omit_none()
    compliance: bool = True
    timeout_s: float = 900.0
    #: the timeout was given: a process the estimate puts over it is refused before
    #: measuring; the default one follows the estimate (``estimate.process_timeout``)
    timeout_given: bool = False
    torchrun: Torchrun = field(default_factory=Torchrun)
    #: the rounds run whatever the budget says where the estimate fitted fewer than three a
    #: side (``estimate.planned``); more follow while the rounds as measured fit the budget
    #: (an estimate made while the machine is loaded can read a step many times what the
    #: runs take). None:
    #: three (``stopping.first_rounds``)
    planned_rounds: int | None = omit_none()

    def __post_init__(self) -> None:
        # repeats, precision, budget and timeout are options: the option table reads them;
        # the round caps follow the budget, so a plan and a request's default plan agree
        if self.max_repeats == 0:
            object.__setattr__(self, "max_repeats", repeat_cap(self.budget_s))
            if self.max_repeats_wide is None:
                object.__setattr__(self, "max_repeats_wide", wide_cap(self.budget_s))
        if not 1 <= self.min_repeats <= self.max_repeats:
            raise ValueError(
                f"need 1 <= min_repeats <= max_repeats, got {self.min_repeats} and "
                f"{self.max_repeats}"
            )
        if self.max_repeats_wide is not None and self.max_repeats_wide < self.max_repeats:
            raise ValueError(
                f"need max_repeats_wide >= max_repeats, got {self.max_repeats_wide} and "
                f"{self.max_repeats}"
            )
        if self.planned_rounds is not None and self.planned_rounds < 1:
            raise ValueError(f"need planned_rounds >= 1, got {self.planned_rounds}")

    @property
    def most_rounds(self) -> int:
        """The most rounds that can run: past ``max_repeats`` only while the interval is
        wider than ``DECISIVE``."""
        return self.max_repeats if self.max_repeats_wide is None else self.max_repeats_wide


#: other processes' share of the machine from which the verdict says they widened the
#: interval
BUSY_SHARE = 0.10


@dataclass(frozen=True, kw_only=True, slots=True)
class Interference:
    """What other processes took of the machine while a comparison measured."""

    #: their share of all cores' time over the measuring (0: a quiet machine)
    share: float
    #: their CPU seconds, all cores together
    other_cpu_s: float
    cores: int
    wall_s: float

    @property
    def lost_s(self) -> float:
        """Wall seconds of the measuring their share amounts to."""
        return self.share * self.wall_s

    @property
    def busy(self) -> bool:
        """Whether they took enough to widen the interval (:data:`BUSY_SHARE`)."""
        return self.share >= BUSY_SHARE


@dataclass(frozen=True, kw_only=True, slots=True)
class Stop:
    """Why measuring stopped (precision, budget, repeat cap, repeats asked, a failure),
    and what the time budget paid for."""

    reason: str
    message: str
    #: seconds on the budget's clock when the rounds ended (the fp64 reference included)
    elapsed_s: float | None = None
    #: the run order, e.g. ``baseline r00``, ``target r00``, ``target r01``, ...
    order: tuple[str, ...] = ()
    #: seconds on the budget's clock when measuring ended (compliance runs included)
    spent_s: float | None = None
    #: set-up before the budget's clock started: freezing the workload, the zygote's start
    setup_s: float | None = None
    #: other processes' share of the machine while measuring (None: unknown here)
    interference: Interference | None = None
    #: what the plan said before measuring and what it left out, one line each (three
    #: processes a side over the budget, compliance runs dropped, a probe skipped)
    notes: tuple[str, ...] | None = omit_none()
    #: seconds each set-up part took (the fp64 reference, the expected-error run, the
    #: first processes' numerics probe and op scan), by name; absent when not run
    probes: dict[str, float] | None = omit_none()
    #: each phase costed before the sides ran, and what the budget cut (``parity.measure.estimate``)
    estimate: Estimate | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class TimingSteps:
    """How many of the workload's steps a side's timing processes ran (every process
    after its first, the quality run, which runs them all), and why."""

    steps: int
    warmup: int
    steady: int
    workload_steps: int
    reason: str
    #: the steps each of the side's processes ran, in order (the quality run first): the
    #: timing processes are sized after the first round and again after the second
    ran: tuple[int, ...] | None = omit_none()
    #: where a timing process's steps end early (``stopping.step_cut``; None: never)
    cut: StepCut | None = omit_none()

    @property
    def shortened(self) -> bool:
        """Fewer steps than the workload's (else every process ran them all)."""
        return self.steps < self.workload_steps


@dataclass(frozen=True, kw_only=True, slots=True)
class MeasureRecord:
    """``side.json``: how much a side was to be measured, and why measuring stopped."""

    stop: Stop
    plan: MeasurePlan
    #: the side's timing processes' steps (None: every process ran the workload's own)
    timing: TimingSteps | None = omit_none()
