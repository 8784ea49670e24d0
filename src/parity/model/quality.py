"""The verdict's quality and numerics sections: every check, the fp64 gates over the whole
run, and where the target's numbers start to differ from fp64.

Checks (``QualityCheck``) are tagged by ``kind``:

- ``loss`` and ``output``: the target against the baseline directly;
- ``tokens``: generated tokens against the baseline's, with the logits margin where they
  first differ (a flip on a near-tie is no fault);
- ``agreement``: cosine similarity (embeddings) or top-1 agreement (classifier and LM
  logits) with the baseline, against the thresholds the plan sets;
- ``fp64`` / ``cosine``: an output or the gradients against the fp64 reference;
- ``trajectory``: the training losses step by step against the fp64 reference's;
- ``nonfinite``: a NaN or Inf in a loss or an output, with the step and module it
  first appeared in;
- ``localisation``: no module's error beyond what the target's precision and its input
  explain (the localisation's rule, as a gate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from parity.model.codec import Json, omit_none
from parity.model.findings import Finding
from parity.model.numerics import OutputKind
from parity.model.roles import ByRole, Role

#: what a fp64 gate's bound is k times: the baseline's error, or the error the target's
#: precision alone makes on the CPU (the expected-error run), whichever is larger
Comparator = Literal["baseline", "expected"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorDistribution:
    max: float
    mean: float
    p99: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ParameterError:
    parameter: str
    #: None: the target's gradient is not finite
    rel_error: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckBase:
    """What every quality check has: a name, whether it is gated, whether it passed (None:
    reported, not gated), a sentence where the figures alone do not say it, an output's kind."""

    name: str
    gated: bool = True
    passed: bool | None
    detail: str | None = omit_none()
    #: what the check found, in figures, where it says it so (``parity.report.words``
    #: says it; ``detail`` where a check still says it in a sentence)
    finding: Finding | None = omit_none()
    tolerance: float | None = omit_none()
    output_kind: OutputKind | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class OutputCheck(CheckBase):
    """A float output, target against baseline: relative RMSE within the tolerance."""

    kind: Literal["output"] = "output"
    rel_rmse: float | None = omit_none()
    max_abs: float | None = omit_none()
    mean_abs: float | None = omit_none()
    cosine: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Divergence:
    """Where a prompt's generated token differs from the baseline's (its first difference,
    or a later one teacher-forced): the baseline's own top-2 logits margin there, and
    whether that makes the flip a near-tie."""

    prompt: int
    position: int
    margin: float | None
    near_tie: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class TokensCheck(CheckBase):
    """Generated tokens against the baseline's: agreement, the first differing position per
    row and the top-2 logits margin there; a row whose first difference falls on a margin
    within ``margin_threshold`` is a near-tie flip.

    Over every prompt (``prompts`` x ``new_tokens``), each prompt is compared up to and
    including its first difference: after it the two sides decode from different
    contexts. Where the target scored the baseline's tokens teacher-forced, its later
    tokens are its predictions on the baseline's context (``teacher_forced`` of them), and
    every token is compared; otherwise they are counted apart (``not_compared``), never as
    differences. ``divergences`` lists every differing token compared."""

    kind: Literal["tokens"] = "tokens"
    agreement: float | None = None
    first_difference: tuple[int | None, ...] = ()
    margins: tuple[float | None, ...] | None = omit_none()
    margin_threshold: float | None = omit_none()
    near_ties: int | None = omit_none()
    prompts: int | None = omit_none()
    new_tokens: int | None = omit_none()
    compared: int | None = omit_none()
    not_compared: int | None = omit_none()
    #: tokens after a prompt's first difference, compared as the target's predictions
    #: teacher-forced on the baseline's tokens
    teacher_forced: int | None = omit_none()
    divergences: tuple[Divergence, ...] | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class LossCheck(CheckBase):
    """The loss curve, target against baseline, step by step."""

    kind: Literal["loss"] = "loss"
    #: what widened ``tolerance`` beyond the precision's own (``quality.compare_losses``):
    #: the baseline's relative improvement over its last tenth of steps (a reduced
    #: precision side), and the curve's own step-to-step noise, detrended
    progress_rel: float | None = omit_none()
    noise_rel: float | None = omit_none()
    final_rel: float | None = omit_none()
    max_rel: float | None = omit_none()
    first_step_outside_band: int | None = None
    final_baseline: float | None = omit_none()
    final_target: float | None = omit_none()
    final_ratio: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class AgreementCheck(CheckBase):
    """An output against the baseline's by what it means: ``cosine`` (embeddings: the
    smallest per-row cosine similarity) or ``top1`` (logits: the share of rows whose
    top-1 class agrees, among the *decisive* rows, whose baseline top-2 margin is beyond
    ``margin_threshold``).

    A top-1 gate with fewer decisive rows than ``required`` (the count at which rows that
    all agree would put the one-sided 95% Clopper-Pearson bound above ``threshold``) is
    not decided: ``decided`` false, ``passed`` None, and it is never a pass; unless the
    upper bound is already under ``threshold``, a decided failure."""

    kind: Literal["agreement"] = "agreement"
    metric: Literal["cosine", "top1"]
    value: float | None = None
    threshold: float
    rows: int = 0
    agreement: float | None = omit_none()
    near_ties: int | None = omit_none()
    margin_threshold: float | None = omit_none()
    decisive: int | None = omit_none()
    required: int | None = omit_none()
    decided: bool | None = omit_none()
    #: rows left out because their contexts differ (after a prompt's first flip)
    not_compared: int | None = omit_none()
    #: the output the rows come from
    output: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ReferenceCheck(CheckBase):
    """An output or the gradients against the fp64 reference (``fp64``), or, without a
    reference, cosine similarity with the baseline (``cosine``). The bound is ``k`` times
    the comparator's error (the baseline's, or the expected-error run's where larger)."""

    kind: Literal["fp64", "cosine"] = "fp64"
    k: float | None = omit_none()
    rmse_target: float | None = omit_none()
    rmse_baseline: float | None = omit_none()
    rmse_expected: float | None = omit_none()
    comparator: Comparator | None = omit_none()
    bound: float | None = omit_none()
    allclose: bool | None = omit_none()
    rule: str | None = omit_none()
    abs_error: ErrorDistribution | None = omit_none()
    rel_error: ErrorDistribution | None = omit_none()
    baseline_abs_error: ErrorDistribution | None = omit_none()
    min_atol: float | None = omit_none()
    min_rtol: float | None = omit_none()
    min_rtol_at_atol_tol: float | None = omit_none()
    cosine: float | None = omit_none()
    values: int | None = omit_none()
    worst_parameters: tuple[ParameterError, ...] | None = omit_none()


#: the loss trajectory's check, by name
LOSS_TRAJECTORY = "loss trajectory against fp64"
#: the least error that explains a module's (``parity.judge.localise``)
EXPLAINED_FLOOR = 1e-6
#: the probe's gradients' check, by name
GRADIENTS = "gradients (first backward) against fp64"
#: the localisation's check, by name
MODULES = "modules against fp64"


def first_forward(output: str) -> str:
    """The probe's check of an output of the first forward pass, by name."""
    return f"first forward {output} against fp64"


#: the trajectory's step rule, by code (``parity.report.words.trajectory_rule`` says it)
TRAJECTORY_RULE = "quality.trajectory-rule"


@dataclass(frozen=True, kw_only=True, slots=True)
class TrajectoryCheck(CheckBase):
    """The training losses against the fp64 reference's, step by step.

    Until ``drift_from_step`` each step passes when the target's error is at most ``k``
    times the comparator's error so far (its running maximum) + tol/10, or within
    allclose; from there on the runs have legitimately drifted apart (``drift_reason``)
    and the windowed mean error is gated instead."""

    kind: Literal["trajectory"] = "trajectory"
    k: float
    steps: int
    comparator: Comparator
    first_failing_step: int | None = None
    worst_step: int | None = None
    #: the target's error over its bound at the worst step (> 1 fails)
    worst_ratio: float | None = None
    drift_from_step: int | None = omit_none()
    #: why the windowed mean is gated from ``drift_from_step`` on (``drift_reason``: an
    #: older verdict's sentence)
    drift: Finding | None = omit_none()
    drift_reason: str | None = omit_none()
    final_error_target: float | None = omit_none()
    final_error_comparator: float | None = omit_none()
    #: the step rule by its code (``TRAJECTORY_RULE``, said with ``k`` and ``tolerance``),
    #: or an older verdict's sentence
    rule: str


def non_finite(role: Role) -> str:
    """The name of a side's check for non-finite values."""
    return f"non-finite values ({role})"


@dataclass(frozen=True, kw_only=True, slots=True)
class NonFiniteCheck(CheckBase):
    """A NaN or Inf in a side's loss or output: where it first appeared."""

    kind: Literal["nonfinite"] = "nonfinite"
    side: Role
    what: str
    step: int | None = None
    module: str | None = None
    where: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalisationCheck(CheckBase):
    """The localisation as a gate: each module's error against fp64 against what the
    target's precision and its input explain (``Localisation.rule``); it fails where a
    module's error exceeds ``factor`` times that, naming the first such ``module``, so a
    verdict never passes beside a module its own evidence says is broken."""

    kind: Literal["localisation"] = "localisation"
    #: the first diverging module (None: none)
    module: str | None = None
    #: its error over ``factor`` times what explains it (> 1: it diverges)
    excess: float | None = omit_none()
    factor: float | None = omit_none()
    #: where the modules were captured: ``after the run`` or ``first forward``
    capture: str | None = omit_none()


QualityCheck = (
    LossCheck
    | OutputCheck
    | TokensCheck
    | AgreementCheck
    | ReferenceCheck
    | TrajectoryCheck
    | NonFiniteCheck
    | LocalisationCheck
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConvergenceRun:
    repeat: str
    converged: bool
    steps: int | None
    time_s: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Convergence:
    """MLPerf style: steps and time to the target loss per repeat."""

    target_loss: float
    runs: tuple[ConvergenceRun, ...]
    success_rate: float
    mean_time_s: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Determinism:
    """A side's first two repeats: bitwise equal, or how far apart."""

    checked: bool
    #: an older verdict's sentence; ``finding`` says it in figures (schema 7)
    detail: str | None = omit_none()
    finding: Finding | None = omit_none()
    bitwise_equal: bool | None = omit_none()
    max_abs_output_diff: float | None = omit_none()
    max_abs_loss_diff: float | None = omit_none()
    compared: tuple[str, ...] | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Quality:
    tolerances: dict[str, float]
    checks: tuple[QualityCheck, ...]
    passed: bool
    method: str
    convergence: ByRole[Convergence] | None = omit_none()
    determinism: ByRole[Determinism] | None = omit_none()

    #: gated checks that are not decided (too little evidence): never a pass, by name (an
    #: older verdict's: with their evidence in words)
    undecided: tuple[str, ...] = ()
    #: for each, the ``--steps`` that would decide it, where its rows grow with the steps
    undecided_steps: tuple[int | None, ...] | None = omit_none()

    def undecided_figures(self) -> list[dict[str, Json]]:
        """Each gate not decided, by name, with the decisive rows it had and needed, and
        the ``--steps`` that would decide it where more steps would."""
        by_name = {c.name: c for c in self.checks}
        steps = self.undecided_steps or (None,) * len(self.undecided)
        out: list[dict[str, Json]] = []
        for name, more in zip(self.undecided, steps, strict=False):
            check = by_name.get(name)
            entry: dict[str, Json] = {"name": name}
            if isinstance(check, AgreementCheck) and check.decisive is not None:
                entry.update(decisive=check.decisive, required=check.required, steps=more)
                if more is None and check.output and not check.output.startswith("every_"):
                    entry["output"] = check.output  # one output's rows: more of them decide
            out.append(entry)
        return out

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if c.gated and c.passed is False)


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerRow:
    """One module's relative error against fp64 (None: not finite).

    ``expected_error`` is the error the target's precision alone makes there (the CPU run
    at that precision, or the baseline's where larger); ``explained`` scales it by how
    much more error the target's input carried than expected; ``excess`` is the target's
    error over ``factor`` times that (> 1: the module diverges)."""

    module: str
    leaf: bool
    type: str | None
    baseline_error: float | None
    target_error: float | None
    target_input_error: float | None
    amplification: float | None
    excess: float | None
    expected_error: float | None = omit_none()
    expected_input_error: float | None = omit_none()
    explained: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Localisation:
    """Where the target's numbers start to differ from fp64 beyond what its precision
    explains; ``capture`` says which forward pass the table comes from."""

    table: tuple[LayerRow, ...]
    first_divergence: str | None
    first_divergence_row: LayerRow | None
    top_amplification: tuple[str, ...]
    #: the rule, by code (``parity.report.words.localisation_rule``; an older verdict's
    #: sentence)
    rule: str
    capture: Literal["after the run", "first forward"] | None = omit_none()
    factor: float | None = omit_none()
    #: what the expected errors come from, as a verdict of schema 6 or older said it
    expected: str | None = omit_none()
    #: the expected-error run the expected errors come from (None: the baseline)
    expected_run: str | None = omit_none()
    #: the target's precision (what a rule that localises nothing names)
    precision: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ReferenceNote:
    available: bool
    bundle: str | None = omit_none()
    #: why it is not available, in figures (``parity.report.words.note``)
    finding: Finding | None = omit_none()
    #: what a verdict of schema 6 or older said instead
    reason: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class NumericsSection:
    """Outputs, losses and gradients against the fp64 reference, and localisation."""

    precision: str
    k: float
    tolerance: float
    gates: tuple[QualityCheck, ...] = ()
    available: bool
    #: why the section is not available: the probe's own error, or (``finding``) the judge's
    reason: str | None = omit_none()
    finding: Finding | None = omit_none()
    reference: ReferenceNote | None = omit_none()
    #: the expected-error run: the workload on the CPU at the target's precision
    expected: ReferenceNote | None = omit_none()
    passed: bool | None = omit_none()
    layers: Localisation | None = omit_none()
    #: why no module is named where the plan left the localisation out (a probe the budget
    #: cut), with the flag that restores it
    not_localised: Finding | None = omit_none()
