"""A comparison's cost before it runs: the cheap figures a ``freeze`` job measures
(``StepCost``), and what the parent makes of them (``Estimate``: each phase's seconds,
what the budget cut and why). ``parity.measure.estimate`` computes them; the estimate goes into
the verdict with how measuring ended (``Stop.estimate``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from parity.model.codec import omit_none
from parity.model.spec import Precision

#: each reduced precision's matmul dtype: its key in ``StepCost.dtype_ratio``
PRECISION_DTYPE: dict[Precision, str] = {"bf16": "bfloat16", "fp16": "float16"}
#: ``StepCost.precision_step_s``'s key for a step in float64, as the fp64 reference runs
FP64 = "fp64"


@dataclass(frozen=True, kw_only=True, slots=True)
class DecisiveRows:
    """How many rows a top-1 gate over every prompt's positions gets, foreseen on the
    first batch of prompts on the CPU (``parity.probes.cost``): what sizes the sides'
    quality runs before they run."""

    #: positions scored in one batch of prompts (batch size x positions a prompt)
    rows_per_batch: int
    #: the batches of prompts the quality run scores
    batches: int
    #: the share of the first batch's rows beyond the near-tie margin foreseen: the
    #: float32 top-2 margin over twice the largest logit error of the sides' reduced
    #: precision against float32 (``parity.judge.agreement.near_tie_margin``)
    share: float
    #: the batches of prompts follow ``--steps`` (one a step): more steps, more rows
    follow_steps: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class StepCost:
    """Cheap figures of a workload on this machine's CPU, measured by the ``freeze`` job
    before anything else runs (``parity.probes.cost``)."""

    #: one step of the workload on the CPU in float32 (the second where it has two: the
    #: first pays one-off set-up), seconds
    step_s: float
    #: building the model and loading the frozen weights and data on the CPU, seconds
    load_s: float
    #: a matmul's time in each dtype over float32's on this CPU (``float64``, ``bfloat16``,
    #: ``float16``): how the fp64 reference and a reduced-precision CPU side scale
    dtype_ratio: dict[str, float]
    #: how ``step_s`` was measured, for the verdict
    method: str
    #: one step on the CPU in a reduced precision a side asks for (``bf16``, ``fp16``),
    #: under its autocast, timed as ``step_s`` is: a step is not all matmuls, so the
    #: matmul's ratio alone can be far off (6x for a bf16 linear against 1.6x for a 135M
    #: model's generation step on a CPU without bf16 units). Under ``FP64``: a step with the
    #: model and data in float64, as the fp64 reference runs (timed where the reference is
    #: not cached). Where absent, ``dtype_ratio`` scales ``step_s``
    precision_step_s: dict[str, float] = field(default_factory=dict)
    #: what a full run's ``finish`` does after its steps, in steps (a generation workload
    #: decodes every prompt once more and scores it: ``StepRunner.finish_cost_s``); a
    #: quality run, the fp64 reference and the expected-error run pay it
    finish_steps: float = 0.0
    #: what the target's quality run pays more, scoring the baseline's tokens, in steps
    forced_steps: float = 0.0
    #: the steps a whole-run reference runs where fewer than the workload's (its steps
    #: leave what ``finish`` returns unchanged: ``StepRunner.reference_steps``); None: all
    reference_steps: int | None = omit_none()
    #: what the numerics probe pays beyond its forward pass: a summary of every module's
    #: first input and output (several passes over each), seconds, from the elements one
    #: step's modules produce and a summary's time per element on this CPU. A small
    #: convolutional network's activations outweigh its step many times
    summary_s: float = 0.0
    #: the rows a top-1 gate over every prompt's positions gets (a generation workload)
    decisive: DecisiveRows | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class PhaseCost:
    """One phase of a comparison, costed before it runs."""

    name: str
    #: estimated seconds (None: not estimated here, e.g. a side on an accelerator whose
    #: speed only its own first process tells)
    seconds: float | None
    #: how the figure was made (one line)
    basis: str
    #: reused from the cache (it costs only a copy)
    cached: bool = False
    #: why the plan left it out (None: it runs)
    cut: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Estimate:
    """A comparison's phases costed before the sides ran, and what the budget kept."""

    phases: tuple[PhaseCost, ...]
    #: the cheap figures it rests on, one line
    basis: str
    budget_s: float
    #: timing processes a side the plan buys (the quality run counted)
    processes: int
    #: the budget that holds three processes a side with every phase (the figure to ask for)
    full_budget_s: float
    #: what the rounds after the planned processes are expected to add: without fixed
    #: ``--repeats`` they go on until the interval reaches the precision or the budget is
    #: spent, which on a noisy host is most of the budget
    rounds_s: float = 0.0

    @property
    def planned_s(self) -> float:
        """Seconds of what still runs (phases not cut, not estimated counted as 0)."""
        return sum(p.seconds or 0.0 for p in self.phases if p.cut is None)

    @property
    def expected_s(self) -> float:
        """Seconds the comparison is expected to take after its first line: the planned
        phases and the rounds the budget leaves room for."""
        return self.planned_s + self.rounds_s

    @property
    def cuts(self) -> tuple[PhaseCost, ...]:
        return tuple(p for p in self.phases if p.cut is not None)
