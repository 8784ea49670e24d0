"""The verdict: from two sides' bundles to one decision, in the order a careful engineer
checks them.

1. fairness: both sides ran the same frozen workload (equal fingerprints), or the user
   allowed each differing field by name, which the verdict then reports;
2. every configuration difference between the sides (side spec, resolved settings and
   environment, each package that differs) and drift from pinned package versions;
3. both sides ran; quality: loss curve and outputs within tolerance, numerics against
   the fp64 reference;
4. only then speed (the step time ratio over fresh processes with a t interval) and cost.

The verdict depends on the bundles and the judge's inputs only (prices are resolved
before judging), so ``parity diff A B`` on bundles made on different machines gives the
same verdict as ``parity compare`` did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from parity.arrays import floating
from parity.errors import ContractError
from parity.judge import compat, decision, quality, tolerances
from parity.judge.agreement import agreement_checks
from parity.judge.cost import judge_cost
from parity.judge.latency import pooled_generation, pooled_inference
from parity.judge.numerics import judge_numerics
from parity.judge.rules import apply_rules
from parity.judge.skipped import localisation_skipped
from parity.judge.speed import judge_speed, side_step_time
from parity.judge.stack import check_pins
from parity.judge.tolerances import Tolerance
from parity.judge.trajectory import nonfinite_checks
from parity.model.bundle import Bundle, SideRuns
from parity.model.codec import Json
from parity.model.findings import Finding, Severity
from parity.model.manifest import FailedAt
from parity.model.metrics import InputPipeline, Throughput
from parity.model.numerics import EVERY_TOP1
from parity.model.quality import (
    AgreementCheck,
    LossCheck,
    NumericsSection,
    OutputCheck,
    Quality,
    QualityCheck,
)
from parity.model.verdict import (
    WORKLOAD_GATE,
    ByRole,
    Gate,
    JudgeInputs,
    SideInfo,
    Verdict,
    WorkloadInfo,
)


def _side_info(side: SideRuns) -> SideInfo:
    """A side's headline figures, pooled over the same repeats as the speed ratio."""
    first = side.first
    env = first.manifest.environment
    failed = [b for b in side.repeats if not b.ok]
    reason = "; ".join(
        (f"{b.path.name}: " if b.path != side.path else "") + str(b.manifest.reason) for b in failed
    )
    metrics = first.metrics
    median = side_step_time(side)
    items = metrics.items_per_step if metrics is not None else None
    throughput = metrics.throughput if metrics is not None else None
    if items is not None and median:
        throughput = Throughput(
            samples_per_s=items.samples / median,
            tokens_per_s=items.tokens / median if items.tokens else None,
        )
    flops = metrics.flops if metrics is not None else None
    if flops is not None and flops.per_step and median:
        achieved = flops.per_step / median
        world = first.manifest.distributed.world_size if first.manifest.distributed else 1
        mfu = achieved / flops.peak.flops / world if flops.peak else None
        flops = replace(flops, achieved_flops=achieved, mfu=mfu)
    noise, noisiest = _worst_noise(side.ok)
    return SideInfo(
        side=first.side,
        status="failed" if failed else "ok",
        reason=reason or None,
        stderr_tail=failed[0].manifest.stderr_tail if failed else None,
        repeats=len(side.repeats),
        repeats_ok=len(side.ok),
        device_name=env.device.name if env is not None else None,
        bundle=str(side.path),
        median_step_s=median,
        throughput=throughput,
        flops=flops,
        generation=pooled_generation(side.ok or side.repeats[:1]),
        inference=pooled_inference(side.ok or side.repeats[:1]),
        noise_warnings=noise,
        noisiest=noisiest if len(side.ok) > 1 else None,
        input_pipeline=InputPipeline.pooled(
            tuple(
                b.metrics.input_pipeline for b in side.ok if b.metrics and b.metrics.input_pipeline
            )
        ),
        placement=env.placement if env is not None else None,
        logs_cut=_logs_cut(side),
    )


def _logs_cut(side: SideRuns) -> tuple[str, ...] | None:
    """A sentence for each log a bundle of the side keeps cut (``logs.json``)."""
    said = tuple(
        (f"{b.path.name}: " if b.path != side.path else "") + cut.sentence()
        for b in side.repeats
        if b.logs is not None
        for cut in b.logs.cut
    )
    return said or None


def _worst_noise(bundles: tuple[Bundle, ...]) -> tuple[tuple[str, ...], str | None]:
    """The noise warnings of the noisiest repeat (largest IQR/median), and its name."""
    noisy = [b for b in bundles if b.metrics is not None and b.metrics.noise_warnings]
    if not noisy:
        return (), None

    def iqr_rel(b: Bundle) -> float:
        s = b.metrics.summary if b.metrics is not None else None
        return s.iqr_rel if s is not None else 0.0

    worst = max(noisy, key=iqr_rel)
    assert worst.metrics is not None
    return worst.metrics.noise_warnings, worst.path.name


def judge_quality(
    a: Bundle, b: Bundle, context: QualityContext, inputs: JudgeInputs
) -> list[QualityCheck]:
    """The target against the baseline directly: the loss curve, every float output, and
    the agreement gates (generated tokens, top-1 of logits, cosine of embeddings)."""
    tol = quality.tolerances(a.side, b.side)
    checks: list[QualityCheck] = []
    if a.losses or b.losses:
        reduced = {a.side.precision, b.side.precision} != {"fp32"}
        checks.append(
            quality.compare_losses(a.losses, b.losses, tol["final_loss_rel"], reduced=reduced)
        )
    out_a, out_b = a.output_tensors(), b.output_tensors()
    for name in sorted(set(out_a) | set(out_b)):
        if name not in out_a or name not in out_b:
            alone = quality.found("quality.one-side-only")
            checks.append(OutputCheck(name=f"output {name}", passed=False, finding=alone))
            continue
        if not floating(out_a[name]):
            continue  # tokens: an agreement gate
        summary = a.outputs.outputs.get(name) if a.outputs is not None else None
        kind = summary.kind if summary is not None else None  # logits, embeddings...
        checks.append(
            quality.compare_output(name, out_a[name], out_b[name], tol["outputs_rel_rmse"], kind)
        )
    return checks + agreement_checks(
        a, b, context.reference, context.expected, context.row, inputs.minimums
    )


@dataclass(frozen=True)
class QualityContext:
    """What the quality section is judged with besides the sides: the fp64 reference, the
    expected-error run and the tolerance row of the target's precision."""

    reference: Bundle | None
    expected: Bundle | None
    row: Tolerance

    @property
    def whole_run(self) -> bool:
        """The reference holds the whole run (not only the probe's first forward)."""
        ref = self.reference
        return ref is not None and ref.ok and ref.outputs is not None


def _reported(checks: list[QualityCheck], kinds: tuple[str, ...]) -> list[QualityCheck]:
    """The direct checks of ``kinds`` that measured something, as reported (a missing
    output, differing shapes or NaN stay gated: no fp64 gate covers them otherwise)."""
    why = quality.found("quality.fp64-decides", "context")
    return [
        replace(c, gated=False, finding=why) if _measured_direct(c, kinds) else c for c in checks
    ]


def _measured_direct(c: QualityCheck, kinds: tuple[str, ...]) -> bool:
    if not c.gated or c.kind not in kinds:
        return False
    if isinstance(c, OutputCheck):
        return c.rel_rmse is not None
    return not isinstance(c, LossCheck) or c.final_rel is not None


def quality_section(
    a: SideRuns,
    b: SideRuns,
    numerics: NumericsSection,
    inputs: JudgeInputs,
    context: QualityContext,
) -> Quality:
    """Direct checks, agreement gates, the fp64 gates where the numerics ran, non-finite
    values: with a whole-run reference its gates decide and the direct checks are reported;
    with a first-forward-only reference the outputs are (as before whole-run references)."""
    first_a, first_b = a.ok[0], b.ok[0]
    checks = judge_quality(first_a, first_b, context, inputs)
    # the fp64 gates decide where some of them are gated (a reduced-precision target
    # without its expected-error run has them reported only: the direct checks decide)
    ref_ok = numerics.available and any(g.gated and g.kind == "fp64" for g in numerics.gates)
    ref_ok = ref_ok and bool(numerics.reference and numerics.reference.available)
    method = "quality.direct"
    if ref_ok and context.whole_run:
        checks = _reported(checks, ("output", "loss"))
        method = "quality.fp64-whole-run"
    elif ref_ok:
        checks = _reported(checks, ("output",))
        method = "quality.fp64-first-forward"
    if numerics.available:
        checks += numerics.gates
    checks += nonfinite_checks(ByRole(baseline=first_a, target=first_b))
    gated = [c for c in checks if c.gated]
    undecided = [c for c in gated if c.passed is None]
    steps = first_a.manifest.workload.description.steps
    return Quality(
        tolerances=quality.tolerances(first_a.side, first_b.side),
        checks=tuple(checks),
        # one rule: a gate not decided is never a pass, whatever passed beside it
        passed=bool(gated) and all(c.passed is True for c in gated),
        undecided=tuple(c.name for c in undecided),
        undecided_steps=tuple(_steps_to_decide(c, steps) for c in undecided),
        method=method,
        convergence=ByRole(
            baseline=quality.convergence(a.ok, inputs.target_loss),
            target=quality.convergence(b.ok, inputs.target_loss),
        )
        if inputs.target_loss is not None
        else None,
        determinism=ByRole(baseline=quality.determinism(a.ok), target=quality.determinism(b.ok)),
    )


#: the margin on the steps asked for: decisive rows are a share of rows that a run of
#: other prompts reads a little differently
MORE_STEPS_MARGIN = 1.2


def _steps_to_decide(check: QualityCheck, steps: int | None = None) -> int | None:
    """For a gate over every prompt's rows (they grow with ``--steps``), the ``--steps``
    that would give the rows it needs at the share of decisive rows this run had; None
    for any other gate."""
    if not isinstance(check, AgreementCheck) or check.decisive is None:
        return None
    if check.output == EVERY_TOP1 and steps and check.decisive and check.required:
        return math.ceil(steps * check.required / check.decisive * MORE_STEPS_MARGIN)
    return None


def quality_gate(qual: Quality) -> Gate:
    """The verdict's quality line: what failed, and which gates were not decided (each
    with its evidence: ``parity.report.words.undecided``)."""
    if qual.failing:
        code, figures = "quality.outside", {"failing": list[Json](qual.failing)}
    else:
        code = "quality.within" if qual.passed else "quality.not-decided"
        figures = {"undecided": list[Json](qual.undecided_figures())}
    severity: Severity = "context" if qual.passed else "blocks"
    found = quality.found(code, severity, **figures)
    decided = None if qual.passed or qual.failing else False
    return Gate(name="quality", passed=qual.passed, finding=found, decided=decided)


def _same_workload(side: SideRuns) -> None:
    if len({b.fingerprint for b in side.repeats}) > 1:
        raise ContractError(
            f"the repeats in {side.path} ran different workloads: keep one workload's "
            "repeats in a side directory"
        )


def _ran_gate(sides: ByRole[SideInfo], own: FailedAt | None = None) -> Gate:
    if own is not None:  # the user's workload, not a side
        fails = Finding(
            code="decision.workload-fails",
            severity="blocks",
            figures={"type": own.type, "phase": own.phase, "source": own.source},
        )
        return Gate(name=WORKLOAD_GATE, passed=False, finding=fails)
    problems = [
        f"{role} failed: {info.reason}" for role, info in sides.items() if info.status != "ok"
    ]
    return Gate(name="both sides ran", passed=not problems, detail="; ".join(problems) or "ok")


def own_failure(baseline: SideRuns, target: SideRuns) -> FailedAt | None:
    """Where each side's first failed run raised in the user's own code alike (the same
    type, phase and line): the workload failing on its own, on any device (a step that
    raises after the pre-run check's steps); None where a side did not fail so, or they
    differ (then a side's failure: one ran what the other could not)."""
    found = []
    for side in (baseline, target):
        failed = next((b for b in side.repeats if not b.ok), None)
        if failed is None or failed.manifest.failed_at is None:
            return None
        found.append(failed.manifest.failed_at)
    return found[0] if found[0] == found[1] else None


#: the gate that says a run the target is judged against failed (never the target's own)
REFERENCES_GATE = "references ran"


def references_gate(reference: Bundle | None, expected: Bundle | None) -> Gate | None:
    """Where the fp64 reference or the expected-error run failed: a gate not decided (the
    target is not judged against a run that did not finish, and its failure is not the
    target's), naming the run and why; None where both ran or were not asked for."""
    failed = [
        f"the {name} {_as_said(run.manifest.reason)}"
        for name, run in (("fp64 reference", reference), ("expected-error run", expected))
        if run is not None and not run.ok
    ]
    if not failed:
        return None
    return Gate(name=REFERENCES_GATE, passed=False, detail="; ".join(failed), decided=False)


def _as_said(reason: str | None) -> str:
    """A run's failure reason as a predicate ("timed out after 900 s ...", "failed: ...")."""
    if not reason:
        return "failed"
    return reason if reason.startswith(("timed out", "was killed")) else f"failed: {reason}"


def judge(
    baseline: SideRuns,
    target: SideRuns,
    *,
    inputs: JudgeInputs | None = None,
    reference: Bundle | None = None,
    expected: Bundle | None = None,
) -> Verdict:
    """Judge two sides; raises ContractError when they are not comparable. ``reference``:
    the fp64 reference; ``expected``: the expected-error run at the target's precision."""
    inputs = inputs or JudgeInputs()
    for side in (baseline, target):
        _same_workload(side)
    first_a, first_b = baseline.first, target.first
    fair = decision.fairness(first_a, first_b, inputs.allow)
    changes = decision.config_differences(
        first_a.side, first_b.side, first_a.manifest.resolved, first_b.manifest.resolved
    ) + decision.flag_differences(first_a, first_b)
    description = first_a.manifest.workload.description
    sides = ByRole(baseline=_side_info(baseline), target=_side_info(target))
    own = own_failure(baseline, target)
    verdict = Verdict(
        workload=WorkloadInfo(
            name=description.name,
            size=description.size,
            kind=description.kind,
            fingerprint=first_a.fingerprint,
            description=description,
        ),
        sides=sides,
        fairness=fair,
        config_differences=changes,
        environment_differences=decision.environment_differences(first_a, first_b),
        pins=check_pins(inputs.pins, first_a.manifest.environment, first_b.manifest.environment),
        gates=(_ran_gate(sides, own),),
        # first ok bundle per side, else its failed one (which may hold a failure scan)
        compatibility=compat.compatibility(first_a, first_b),
        contract=decision.contract(first_a, first_b, fair, changes),
        unproven=decision.unproven(inputs.checked, sides),
        operational=decision.operational(inputs.operational),
    )
    settings = decision.settings_gate({"baseline": baseline.repeats, "target": target.repeats})
    if settings is not None:  # said, and a change of what a side computes in fails
        contract = replace(verdict.contract, holds=verdict.contract.holds and settings.passed)
        verdict = replace(verdict, gates=(*verdict.gates, settings), contract=contract)
    # a reference runs the same workload: where it failed on its own, so did they
    refs = references_gate(reference, expected) if own is None else None
    if refs is not None:
        verdict = replace(verdict, gates=(*verdict.gates, refs))
    verdict = apply_rules(verdict, baseline, target, inputs)
    if not (baseline.ok and target.ok):
        return verdict
    return _measured(verdict, baseline, target, inputs, (reference, expected))


def _measured(
    verdict: Verdict,
    a: SideRuns,
    b: SideRuns,
    inputs: JudgeInputs,
    references: tuple[Bundle | None, Bundle | None],
) -> Verdict:
    """Quality first; speed and cost only for a target that passes it, and not for an
    emulated side (a numerics preview)."""
    first_a, first_b = a.ok[0], b.ok[0]
    reference, expected = references
    numerics = judge_numerics(first_a, first_b, reference, expected)
    if numerics.layers is None:  # said here on every outcome, not under a withheld Speed
        numerics = replace(numerics, not_localised=localisation_skipped(a, b))
    context = QualityContext(
        reference=reference, expected=expected, row=tolerances.of(numerics.precision)
    )
    qual = quality_section(a, b, numerics, inputs, context)
    failing = qual.failing
    gate = quality_gate(qual)
    verdict = replace(
        verdict,
        gates=(*verdict.gates, gate),
        quality=qual,
        numerics=numerics,
        memory=ByRole(baseline=first_a.metrics.memory, target=first_b.metrics.memory)
        if first_a.metrics and first_b.metrics
        else None,
        phases=ByRole(baseline=first_a.metrics.phases, target=first_b.metrics.phases)
        if first_a.metrics and first_b.metrics
        else None,
    )
    if failing or not any(c.gated for c in qual.checks):
        # quality first: a target that fails quality gets no speed or cost verdict; one
        # whose quality is only not decided keeps them (nothing failed)
        held = Finding(
            code="decision.withheld-quality", severity="blocks", figures={"failing": [*failing]}
        )
        return replace(verdict, findings=(*verdict.findings, held))
    emulated: list[Json] = [
        f"{role} {info.side}" for role, info in verdict.sides.items() if info.side.emulate
    ]
    if emulated:
        held = Finding(
            code="decision.withheld-emulated", severity="blocks", figures={"sides": emulated}
        )
        return replace(verdict, findings=(*verdict.findings, held))
    speed = judge_speed(a, b)
    kind = first_a.manifest.workload.description.kind
    generation = ByRole(
        baseline=verdict.sides.baseline.generation, target=verdict.sides.target.generation
    )  # pooled once, in the sides' figures
    cost = judge_cost(a, b, kind, inputs.cost, speed, qual.convergence, generation)
    return replace(verdict, speed=speed, cost=cost)
