"""What the three checks share: setting up a check's directory and parts, writing
``check.json``, the loss continuation gates, and ticking the verdict's "not yet proven"
list from stored check results.

A check directory (``--out``) holds one bundle per part (a fresh worker process each),
a ``checkpoint/`` where one was saved, and ``check.json``, written last. A verdict ticks
an item from the ``check.json`` files under ``OUT/checks/*/`` of a comparison (``parity
compare --checks DIR,...`` copies them there; ``parity diff`` reads them beside the
sides, or from its own ``--checks``), when the check passed and ran on the verdict's
sides: the target (and for rollback the baseline) side specs must be equal, and rollback
and recovery must have trained the same workload architecture (the fingerprint's
``config`` part; the step count differs by design). Soak runs inference or generation,
so any workload of the target's side counts.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from parity.arrays import floating
from parity.bundle import Bundle, read_doc, write_doc
from parity.devices.names import run_together
from parity.errors import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    BundleError,
    CheckError,
    OptionError,
)
from parity.judge import quality
from parity.measure.orchestrate import (
    EventHook,
    JobTemplate,
    Orchestrator,
    Part,
    ProgressSink,
    check_fresh,
    default_out,
)
from parity.measure.remote import placed_sides
from parity.model.checks import (
    ITEMS,
    CheckFigures,
    CheckGate,
    CheckName,
    CheckResult,
    CheckSettings,
    CheckSides,
    CheckWorkload,
    Continuation,
    Gate,
    PartRecord,
    SlopeGate,
)
from parity.model.job import CheckpointPlan
from parity.model.quality import OutputCheck
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.workload import Kind
from parity.report import words
from parity.request import CheckRequest
from parity.runner.launch import Launcher
from parity.runner.prepare import preflight, prepare_workload
from parity.version import __version__

CHECK_FILE = "check.json"
CHECKS_DIR = "checks"
CHECKPOINT_DIR = "checkpoint"


@dataclass(frozen=True)
class CheckRun:
    """A check under way: its directory, the workload's job template, the scheduler, and
    for rollback and recovery the steps before (``k``) and after (``m``) the checkpoint."""

    request: CheckRequest
    out: Path
    template: JobTemplate
    orch: Orchestrator
    kind: str
    k: int = 0
    m: int = 0
    #: what the check holds until it finishes (its side's actor on a cluster node)
    held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    @property
    def checkpoint(self) -> Path:
        return (self.out / CHECKPOINT_DIR).resolve()


#: the kinds of workload each check runs, and what to say of another
KINDS: dict[CheckName, tuple[tuple[Kind, ...], str]] = {
    "rollback": (
        ("train",),
        "rollback and recovery checkpoint training, e.g. mlp-train or gpt-train",
    ),
    "recovery": (
        ("train",),
        "rollback and recovery checkpoint training, e.g. mlp-train or gpt-train",
    ),
    "soak": (
        ("infer", "generate"),
        "soak runs inference or generation, e.g. cnn-infer or gpt-generate",
    ),
}


def _check_kind(check: CheckName, name: str, kind: str | None) -> None:
    kinds, hint = KINDS[check]
    if kind is not None and kind not in kinds:
        raise OptionError(f"{name} is a {kind} workload: {hint}")


def start(request: CheckRequest, progress: ProgressSink | None) -> CheckRun:
    """Prepare the workload in a worker (rollback and recovery: with K + M steps, K and M
    given or half of the workload's steps each), check its kind, make the directory. A
    built-in's kind and the output directory are checked before any worker starts."""
    from parity.workloads.names import known_kind

    _check_kind(request.check, request.workload.name, known_kind(request.workload.name))
    if request.out:
        check_fresh(Path(request.out))
    launcher, held = Launcher(), contextlib.ExitStack()
    try:
        placed = held.enter_context(
            placed_sides(request.cluster, _roles(request), request.workload)
        )
        if "baseline" in placed:  # rollback resumes on the baseline's node
            placed = {**placed, "resumed": placed["baseline"]}
        sides = (request.target, request.baseline)
        preflight(
            [s for s in sides if s],
            launcher=launcher,
            workload=request.workload,
            cluster=request.cluster,
        )
        spec, k, m = request.workload, 0, 0
        if request.check in ("rollback", "recovery"):
            k, m = _steps(request, launcher)
            spec = replace(spec, steps=k + m)
        prepared = prepare_workload(spec, launcher=launcher, timeout_s=request.timeout_s)
        _check_kind(request.check, prepared.name, prepared.kind)
        out = Path(request.out) if request.out else default_out(prepared.name, request.check)
        check_fresh(out)
        out.mkdir(parents=True, exist_ok=True)
        template = JobTemplate.of(spec, prepared, timeout_s=request.timeout_s)
    except BaseException:
        launcher.close()
        held.close()
        raise
    orch = Orchestrator(out=out, progress=progress, launcher=launcher, placed=placed)
    run = CheckRun(request=request, out=out, template=template, orch=orch, kind=prepared.kind)
    return replace(run, k=k, m=m, held=held)


def _roles(request: CheckRequest) -> dict[str, SideSpec]:
    """The sides a check places on a cluster's nodes, by the role its jobs run as."""
    if request.check == "rollback":
        return {"baseline": request.baseline or request.target, "target": request.target}
    return {request.check: request.target}


def _steps(request: CheckRequest, launcher: Launcher) -> tuple[int, int]:
    """K and M: given, else half of the workload's steps each (at least one), read from
    the workload as a worker describes it."""
    if request.k is not None and request.m is not None:
        return request.k, request.m
    described = prepare_workload(
        request.workload, launcher=launcher, freeze=False, timeout_s=request.timeout_s
    )
    _check_kind(request.check, described.name, described.kind)
    steps = described.steps or 2
    k = request.k if request.k is not None else max(1, steps // 2)
    m = request.m if request.m is not None else max(1, steps - k)
    return k, m


@dataclass(frozen=True)
class Training:
    """One training job of a check: its name (its bundle's directory and label), side,
    checkpoint plan and, where the check acts on it while it runs, an event hook."""

    name: str
    side: SideSpec
    checkpoint: CheckpointPlan
    hook: EventHook | None = None


def train(run: CheckRun, jobs: Sequence[Training]) -> dict[str, Bundle]:
    """The check's training jobs, at the same time where their devices allow it."""
    parts = [
        Part(
            job=run.template.job(j.name, j.side, j.checkpoint),
            path=run.out / j.name,
            label=j.name,
            hook=j.hook,
        )
        for j in jobs
    ]
    together = run_together(*(j.side.device for j in jobs))
    done = run.orch.parallel(parts, together=together)
    return {j.name: bundle for j, bundle in zip(jobs, done, strict=True)}


def resume(run: CheckRun, side: SideSpec) -> Bundle:
    """The part that resumes from the check's checkpoint on ``side`` (``OUT/resumed``)."""
    job = run.template.job("resumed", side, CheckpointPlan(resume_from=str(run.checkpoint)))
    return run.orch.run(job, run.out / "resumed", label="resumed")


def parts_ran(bundles: dict[str, Bundle], expected_failed: tuple[str, ...] = ()) -> Gate:
    bad = [
        f"{name} failed: {b.manifest.reason}"
        for name, b in bundles.items()
        if not b.ok and name not in expected_failed
    ]
    return Gate(name="every part ran", passed=not bad, detail="; ".join(bad) or "ok")


def continuation(
    base: Bundle, resumed: Bundle, start: int, tol: dict[str, float], label: str
) -> tuple[list[CheckGate], Continuation]:
    """Gates on the resumed run against the uninterrupted one, from step ``start`` on:
    every step's loss within the tolerance, and the trained model's outputs."""
    lb, lr = list(base.losses), list(resumed.losses)
    loss = quality.compare_losses(lb[start:], lr[start:], tol["final_loss_rel"])
    every = loss.max_rel is not None and loss.max_rel <= tol["final_loss_rel"]
    detail = words.detail(loss) or (
        f"max relative difference {loss.max_rel:.3g} (tolerance {tol['final_loss_rel']:g})"
        + (
            ""
            if every or loss.first_step_outside_band is None
            else f"; first step outside: {start + loss.first_step_outside_band}"
        )
    )
    gates: list[CheckGate] = [
        replace(
            loss,
            name=f"loss curve from step {start} ({label})",
            passed=bool(loss.passed and every),
            detail=detail,
        )
    ]
    out_b, out_r = base.output_tensors(), resumed.output_tensors()
    rmse: dict[str, float] = {}
    for name in sorted(set(out_b) & set(out_r)):
        if not floating(out_b[name]):
            continue
        check = quality.compare_output(name, out_b[name], out_r[name], tol["outputs_rel_rmse"])
        if not isinstance(check, OutputCheck):
            continue
        check = replace(
            check,
            name=f"trained model's {name}",
            detail=words.detail(check)
            or f"relative RMSE {check.rel_rmse or 0.0:.3g} (tolerance {tol['outputs_rel_rmse']:g})",
        )
        if check.rel_rmse is not None:
            rmse[check.name] = check.rel_rmse
        gates.append(check)
    return gates, Continuation(
        continuation_steps=len(lb[start:]),
        loss_max_rel_diff=loss.max_rel,
        loss_final_rel_diff=loss.final_rel,
        loss_tolerance=tol["final_loss_rel"],
        bitwise_equal_losses=lb[start:] == lr[start:],
        outputs_rel_rmse=rmse,
    )


def outcome(gates: Sequence[CheckGate]) -> tuple[bool, int, str | None]:
    """Whether a check passed, its exit code and the reason where it did not: a failing
    gate fails it (1); else a gate that could not decide makes it inconclusive (3), never
    a pass; a check without gates failed to measure anything (1)."""
    failing = [g for g in gates if not g.passed]
    undecided = [g for g in gates if g.passed and _undecided(g)]
    if gates and not failing and not undecided:
        return True, EXIT_OK, None
    code = EXIT_FAIL if failing or not gates else EXIT_INCONCLUSIVE
    reason = "; ".join(f"{g.name}: {_said(g) or 'failed'}" for g in failing or undecided)
    return False, code, reason or None


def _said(gate: CheckGate) -> str | None:
    """What a check's gate found, in words."""
    return words.slope(gate) if isinstance(gate, SlopeGate) else gate.detail


def _undecided(gate: CheckGate) -> bool:
    """A gate that did not fail and could not decide either (a slope whose interval
    reaches past its bound)."""
    return isinstance(gate, SlopeGate) and gate.figure.conclusive is False


def finish(
    run: CheckRun,
    *,
    sides: CheckSides,
    settings: CheckSettings,
    gates: list[CheckGate],
    figures: CheckFigures,
    bundles: dict[str, Bundle],
    evidence: str,
) -> CheckResult:
    """Write ``check.json`` (last, atomically), end the check's worker launcher, and
    return the result."""
    run.orch.close()
    run.held.close()
    check: CheckName = run.request.check
    passed, exit_code, reason = outcome(gates)
    spec: WorkloadSpec = run.template.workload
    result = CheckResult(
        check=check,
        item=ITEMS[check],
        passed=passed,
        exit_code=exit_code,
        reason=reason,
        conclusive=False if exit_code == EXIT_INCONCLUSIVE else None,
        parity_version=__version__,
        created_unix=time.time(),
        workload=CheckWorkload(
            spec=spec,
            name=run.template.description.name,
            size=spec.size,
            kind=run.template.description.kind,
            fingerprint=run.template.fingerprint,
            parts=run.template.parts,
        ),
        sides=sides,
        settings=settings,
        gates=tuple(gates),
        figures=figures,
        bundles={
            name: PartRecord(path=b.path.name, status=b.status, reason=b.manifest.reason)
            for name, b in bundles.items()
        },
        evidence=evidence,
    )
    write_doc(run.out / CHECK_FILE, result)
    return result


def loss_tolerances(a: CheckRequest) -> dict[str, float]:
    return quality.tolerances(a.target, a.baseline or a.target)


# -- the verdict's unproven list -------------------------------------------------------------


def read_check(path: Path) -> CheckResult:
    """A ``check.json`` (or a directory holding one); CheckError names what is wrong."""
    file = path / CHECK_FILE if path.is_dir() else path
    if not file.is_file():
        raise CheckError(f"{file} does not exist: pass a directory written by parity check")
    try:
        return read_doc(file, CheckResult)
    except BundleError as exc:
        raise CheckError(f"{exc} (not a parity check result: rerun parity check)") from None


def read_checks(paths: list[Path]) -> list[CheckResult]:
    return [read_check(p) for p in paths]


def store_checks(out: Path, paths: list[Path]) -> None:
    """Copy each ``check.json`` into ``OUT/checks/<check>[-N]/`` of a comparison."""
    for path in paths:
        result = read_check(path)
        name, n = result.check, 1
        dest = out / CHECKS_DIR / name
        while dest.exists():
            n += 1
            dest = out / CHECKS_DIR / f"{name}-{n}"
        dest.mkdir(parents=True)
        src = path / CHECK_FILE if path.is_dir() else path
        shutil.copyfile(src, dest / CHECK_FILE)


def stored_checks(*roots: Path) -> list[Path]:
    """The ``check.json`` files under ``ROOT/checks/*/`` of each root (a comparison dir)."""
    found: list[Path] = []
    for root in roots:
        base = root / CHECKS_DIR
        if base.is_dir():
            found += sorted(p for p in base.glob(f"*/{CHECK_FILE}") if p not in found)
    return found


def _proves(c: CheckResult, baseline: Bundle, target: Bundle) -> bool:
    config = target.manifest.workload.parts.config
    trained = c.workload.parts.config
    if c.check == "rollback":
        same = c.sides.target == target.side and c.sides.baseline == baseline.side
        return same and trained == config
    if c.check == "recovery":
        return c.sides.device == target.side and trained == config
    return c.sides.device == target.side


def checked_items(checks: list[CheckResult], baseline: Bundle, target: Bundle) -> dict[str, str]:
    """The unproven items these checks prove for a verdict on ``baseline``/``target``."""
    out: dict[str, list[str]] = {}
    for c in checks:
        if not c.passed or not _proves(c, baseline, target):
            continue
        lines = out.setdefault(c.item, [])
        if c.evidence not in lines:  # the same result given twice counts once
            lines.append(c.evidence)
    return {item: "; ".join(lines) for item, lines in out.items()}


def checked_for(
    baseline: Bundle, target: Bundle, *, roots: list[Path], extra: list[Path] | None = None
) -> dict[str, str]:
    """Items proven by the checks stored under the roots and any given explicitly."""
    return checked_items(read_checks(stored_checks(*roots) + list(extra or [])), baseline, target)
