"""The plans of the commands that measure, on the ``Orchestrator``: a single run (or
scan), a comparison (set-up, the fp64 reference, interleaved rounds, the compliance
runs, the expected-error run), a comparison in script mode, a resumed comparison and a
throughput-latency curve.

A comparison's plan ends in a ``Comparison`` made of the bundles the orchestrator
loaded as each run finished (nothing is read back), handed to ``parity.sinks``: judged,
its verdict written once, then the report, the index and MLflow. Bad input is refused
before anything is written; a side that fails is a result, not an error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from parity.arrays import floating
from parity.bundle import (
    EXPECTED_DIR,
    forget_verdict,
    is_bundle,
)
from parity.comparison import Comparison
from parity.errors import OptionError, ResumeError, UsageError
from parity.measure import budget, decisive
from parity.measure import estimate as estimates
from parity.measure.beside import compliance_runs, copy_bundle, expected_run, fp64_reference
from parity.measure.orchestrate import (
    JobTemplate,
    Orchestrator,
    ProgressSink,
    check_fresh,
    clear_partial,
    default_out,
)
from parity.measure.remote import placed_sides, url_out
from parity.measure.resumable import check_resumable, says_how_to_resume
from parity.measure.stopping import adaptive_stop, timing_plan
from parity.model.bundle import Bundle
from parity.model.estimate import Estimate
from parity.model.job import Job, JobPlan, ScanPlan, TimingPlan
from parity.model.numerics import EVERY_TOKENS
from parity.model.side import MeasurePlan, Stop
from parity.model.spec import SideSpec
from parity.model.verdict import Role
from parity.paths import locked
from parity.request import REQUEST_FILE, CompareRequest, RunRequest
from parity.runner.ahead import import_ahead
from parity.runner.launch import Launcher
from parity.runner.prepare import preflight, prepare_workload
from parity.safety.redact import REDACTED
from parity.stats.proportion import required_rows
from parity.storage import local, publish, staging, upload


class Measured(NamedTuple):
    """A comparison as measured, before it is judged: the request it answers (the stored
    one, on a resume) and the URL it is published at."""

    comparison: Comparison
    request: CompareRequest
    url: str | None


class Ran(NamedTuple):
    """One side's run as made: its bundle and the URL it was published at."""

    bundle: Bundle
    url: str | None


if TYPE_CHECKING:
    from parity.model.spec import WorkloadSpec
    from parity.workloads.script import ScriptCommand

log = logging.getLogger("parity")
#: what the comparison's end imports, imported while the zygote starts: the index
#: (sqlalchemy) and, where a report is written, the HTML report (matplotlib), both slow
#: imports that would otherwise wait until the sides are done
END_IMPORTS = ("parity.sinks", "parity.store")
REPORT_IMPORTS = ("parity.report.plots", "parity.report.html")


# -- one run or scan -------------------------------------------------------------------------


def _script_template(argv: tuple[str, ...], timeout_s: float) -> tuple[JobTemplate, ScriptCommand]:
    from parity.workloads.script import describe, parse_command, script_spec

    command = parse_command(argv)
    parts, description = describe(command)
    template = JobTemplate(
        workload=script_spec(command),
        frozen=None,
        fingerprint=parts.digest(),
        parts=parts,
        description=description,
        timeout_s=timeout_s,
    )
    return template, command


def _prepare(
    request: RunRequest | CompareRequest,
    launcher: Launcher,
    *,
    timeout_s: float,
    spec: WorkloadSpec | None = None,
    cost: bool = False,
    sides: tuple[SideSpec, ...] = (),
) -> JobTemplate:
    """The request's workload (or ``spec``) resolved and frozen by a worker, ``sides``
    pre-flighted in the same job: user code never runs in this process."""
    spec = spec or request.workload
    assert spec is not None
    prepared = prepare_workload(
        spec, launcher=launcher, timeout_s=timeout_s, cost=cost, sides=sides,
        cluster=request.cluster,
    )  # fmt: skip
    return JobTemplate.of(spec, prepared, timeout_s=timeout_s)


def run(request: RunRequest, *, progress: ProgressSink | None = None) -> Ran:
    """Run one side once (or scan it) into the bundle ``request.out`` (published at its
    URL where it names one); the API indexes it."""
    url = url_out(request.out)
    out = staging() if url else local(request.out) if request.out else None
    out = out or default_out(request.name, request.mode)
    check_fresh(out)
    roles: dict[str, SideSpec] = {request.mode: request.side}
    with (
        placed_sides(request.cluster, roles, request.workload) as placed,
        Launcher() as launcher,
    ):
        preflight(
            (request.side,), launcher=launcher, workload=request.workload, cluster=request.cluster
        )
        if request.script:
            template, command = _script_template(request.script, request.timeout_s)
            plan = command.plan(request.side)
            job = template.job("run", request.side, plan)
        else:
            template = _prepare(request, launcher, timeout_s=request.timeout_s)
            # a run captures the numerics probe, for a later diff
            kept: JobPlan = TimingPlan(capture=True) if request.mode == "run" else ScanPlan()
            job = template.job(request.mode, request.side, kept, torchrun=request.torchrun)
        if out.is_dir():
            out.rmdir()
        with Orchestrator(out=out, progress=progress, launcher=launcher, placed=placed) as orch:
            bundle = orch.run(job, out, label=request.mode)
    if url:
        publish(out, url)
    return Ran(bundle, url)


# -- a comparison ----------------------------------------------------------------------------


def _start(request: CompareRequest, out: Path, resuming: bool) -> None:
    from parity.checks.common import store_checks

    if resuming:
        clear_partial(out)
        forget_verdict(out)
        return
    check_fresh(out)
    out.mkdir(parents=True, exist_ok=True)
    request.save(out)
    store_checks(out, [Path(p) for p in request.checks])


def compare(
    request: CompareRequest,
    *,
    progress: ProgressSink | None = None,
    resuming: bool = False,
    published: str | None = None,
) -> Measured:
    """Measure both sides in fresh, interleaved processes (the API judges them;
    ``published``: a resumed comparison's URL, its local copy in ``request.out``)."""
    if request.batch_sizes:
        raise OptionError("a throughput-latency curve is compare_curve's: use parity compare")
    if request.script:
        return _compare_script(request, progress=progress, resuming=resuming)
    from parity.cache import cache_root, expected_dir, reference_dir

    url = published or url_out(request.out, resuming)
    if url and not resuming:  # measured and judged in a local staging directory, then published
        request = replace(request, out=str(staging()))
    if request.out and not resuming:
        check_fresh(local(request.out))  # before a worker starts
    plan = request.measure
    began = time.monotonic()  # set-up: preparing the workload (and the zygote) counts
    roles = {"baseline": request.baseline, "target": request.target}
    with (
        placed_sides(request.cluster, roles, request.workload) as placed,
        Launcher() as launcher,
    ):
        assert request.workload is not None
        launcher.warm(request.workload.name)  # the zygote imports while this process does
        import_ahead(*END_IMPORTS, *(REPORT_IMPORTS if request.report else ()))  # meanwhile
        from parity.checks.common import read_checks

        read_checks([Path(p) for p in request.checks])  # validated before anything is written
        costed = not resuming and request.cluster is None  # this machine runs both sides
        # the sides are pre-flighted in the job that prepares the workload
        template = _prepare(
            request, launcher, timeout_s=plan.timeout_s, cost=costed,
            sides=(request.baseline, request.target),
        )  # fmt: skip
        sized = None
        if costed:  # the quality runs sized for the top-1 gate, before anything is costed
            template, request, sized = _sized(request, template, launcher)
        estimate, plan, raised = _costed(request, template) if costed else (None, plan, None)
        template = replace(template, timeout_s=plan.timeout_s)
        reseeded = _reseeded(replace(request, measure=plan), launcher) if plan.compliance else None
        out = local(request.out) if request.out else default_out(template.description.name)
        _start(request, out, resuming)  # the request as given: the plan is the estimate's
        if url and not resuming:
            upload(out, url)  # the request: a run lost mid-way resumes from the URL
        request = replace(request, measure=plan)
        with (
            says_how_to_resume(out),
            locked(out),
            Orchestrator(
                out=out,
                progress=progress,
                launcher=launcher,
                started=began,
                placed=placed,
                landed=_uploader(out, url),
                rerun_failed=resuming,
            ) as orch,
        ):
            orch.start_budget(
                template.job("baseline", request.baseline),
                template.job("target", request.target),
            )
            _planned_notes(orch, estimate, plan, raised, sized)
            cache = cache_root()
            # the whole run in fp64 (a new cache: references before it hold the probe only)
            reference = fp64_reference(orch, template, reference_dir(cache))
            stop, compliance = _measure(request, orch, template, reseeded, estimate)
            target = orch.measured.get("target", [])
            expected = _expected(orch, template, target, expected_dir(cache))
            orch.notes.extend(note for side in placed.values() for note in side.notes)
            sides = orch.sides(orch.finish(stop, plan), plan, compliance)
    return Measured(
        Comparison.measured(out, sides, reference=reference, expected=expected), request, url
    )


def _planned_notes(
    orch: Orchestrator,
    estimate: Estimate | None,
    plan: MeasurePlan,
    raised: str | None,
    sized: str | None,
) -> None:
    """What the plan decided before the sides ran (its cuts, a raised timeout, the quality
    runs sized for the top-1 gate), kept for the verdict."""
    if estimate is not None:
        orch.estimate = estimate
        orch.notes.extend(estimates.notes(estimate, plan.repeats))
    orch.notes.extend(note for note in (raised, sized) if note is not None)


def _costed(
    request: CompareRequest, template: JobTemplate
) -> tuple[Estimate | None, MeasurePlan, str | None]:
    """The comparison costed before the sides run (refused here, nothing written, where
    even the least of it is over the budget), the plan it fits, and the note where the
    process timeout was raised to hold the longest process it foresees."""
    from parity.cache import cache_root

    estimate = estimates.for_request(request, template, cache_root())
    if estimate is not None:
        log.warning("parity: %s", estimates.summary(estimate))
    plan = estimates.planned(request.measure, estimate)
    timeout = estimates.process_timeout(estimate, plan)  # refused here where given and short
    if timeout == plan.timeout_s:
        return estimate, plan, None
    raised = estimates.timeout_note(estimate, timeout)
    log.warning("parity: %s", raised)
    return estimate, replace(plan, timeout_s=timeout), raised


def _sized(
    request: CompareRequest, template: JobTemplate, launcher: Launcher
) -> tuple[JobTemplate, CompareRequest, str | None]:
    """The workload prepared again with the steps its top-1 gate needs
    (``parity.measure.decisive``) where the user left the steps to it, and the request
    that asks for them (a resumed comparison runs the same); where the gate is foreseen
    short of its rows otherwise, the line saying so. Both lines are logged before
    measuring."""
    cost, steps = template.cost, template.description.steps or 0
    required = required_rows(request.judge.minimums.top1)
    spec = request.workload
    assert spec is not None
    more = decisive.sized_steps(cost, steps, required) if spec.steps is None else None
    if more is None or cost is None:
        said = decisive.short(cost, steps, required)
        if said is not None:
            log.warning("parity: %s", said)
        return template, request, said
    said = decisive.sized_note(cost, steps, more, required)
    log.warning("parity: %s", said)
    spec = replace(spec, steps=more)
    again = _prepare(
        request, launcher, timeout_s=template.timeout_s, spec=spec,
        sides=(request.baseline, request.target),
    )  # fmt: skip
    template = replace(again, cost=decisive.rescaled(cost, steps, more))
    return template, replace(request, workload=spec), said


def _uploader(out: Path, url: str | None) -> Callable[[Path], None] | None:
    """Each side's bundle uploaded to ``url`` as it lands (no commit marker: the run is
    not done), so that ``--resume URL`` after the driver is lost reruns only the rest."""
    if url is None:
        return None

    def landed(path: Path) -> None:
        try:
            upload(out, url, path.relative_to(out).as_posix())
        except (OSError, ValueError, UsageError) as exc:
            log.warning("parity: warning: %s was not uploaded yet (%s)", path.name, exc)

    return landed


def _expected(
    orch: Orchestrator, template: JobTemplate, target: list[Bundle], cache: Path
) -> Bundle | None:
    """The expected-error run at the precision the target's first bundle ran in (none for
    an fp32 target, or a target that failed). A target on the CPU at that precision and
    nothing else (``cpu+bf16``) is its own expected-error run: its quality run is copied
    to ``OUT/expected`` instead of running the same again."""
    from parity.model.precision import bundle_autocast_policy, bundle_precision, expected_side

    ok = [b for b in target if b.ok]
    if not ok:
        return None
    first = ok[0]
    side = expected_side(first.side, bundle_precision(first), bundle_autocast_policy(first))
    if side is None:
        return None
    if side != first.side:
        return expected_run(orch, template, side, cache)
    dest = orch.out / EXPECTED_DIR
    if not is_bundle(dest):
        copy_bundle(first.path, dest)
    orch.notes.append(
        f"no expected-error run: the target ({first.side}) is that run's own device and "
        "settings, so its quality run is the expected-error run"
    )
    return replace(first, path=dest)  # the bytes already verified, under their copy's name


def _reseeded(request: CompareRequest, launcher: Launcher) -> JobTemplate:
    """The compliance run's workload: the same, seeded one further (frozen in set-up, by
    a worker)."""
    assert request.workload is not None
    spec = replace(request.workload, seed=request.workload.seed + 1)
    return _prepare(request, launcher, timeout_s=request.measure.timeout_s, spec=spec)


def _measure(
    request: CompareRequest,
    orch: Orchestrator,
    template: JobTemplate,
    reseeded: JobTemplate | None,
    estimate: Estimate | None = None,
) -> tuple[Stop, dict[str, Bundle]]:
    """The rounds of both sides (each side's first process its quality run, the ones after
    it timing processes sized from it), then, where the budget holds them and no side
    failed, the target's compliance runs (timing processes too), on the budget's clock."""
    plan = request.measure
    sides = {"baseline": request.baseline, "target": request.target}
    runs_after = 2 if reseeded is not None else 0
    # time to a loss needs every process's whole run
    shorten = request.judge.target_loss is None

    def job(role: Role, k: int) -> Job:
        timing = orch.timing.get(role) if k > 0 else None
        steps = timing.steps if timing is not None and timing.shortened else None
        cut = timing.cut if timing is not None else None
        skip = estimates.skipped(estimate, role) if k == 0 else None
        # the target's quality run scores the baseline's tokens too (it runs second)
        forced = forced_tokens(orch.measured) if role == "target" and k == 0 else None
        timed = TimingPlan(capture=k == 0, steps=steps, cut=cut, skip=skip, forced=forced)
        return template.job(role, sides[role], timed, repeat=k, torchrun=plan.torchrun)

    stop = orch.rounds(
        job,
        plan,
        adaptive_stop(plan, runs_after=runs_after),
        after_first=timing_plan(orch, plan, runs_after=runs_after, shorten=shorten),
        first_in_turn=template.description.kind == "generate",
    )
    orch.release("baseline")  # its last job ran: its node is given back
    if estimate is not None and orch.tally is not None:
        took = {f"{r} quality run": s[0] for r, s in orch.tally.run_s.items() if s}
        orch.notes[:] = estimates.outran(estimate, orch.notes, orch.tally.rounds, took)
    compliance: dict[str, Bundle] = {}
    if reseeded is not None and stop.reason != "failure":
        if _compliance_fits(orch, plan):
            timing = orch.timing.get("target")
            steps = timing.steps if timing is not None and timing.shortened else None
            compliance = compliance_runs(orch, request.target, reseeded, template, steps=steps)
        else:
            orch.notes.append(
                f"the compliance runs were dropped: the budget ({plan.budget_s:g} s) could not "
                f"hold them after {len(orch.tally.done['target']) if orch.tally else 0} "
                "processes a side; a larger --budget runs them"
            )
    orch.release("target")
    return stop, compliance


def forced_tokens(done: Mapping[Role, list[Bundle]]) -> tuple[tuple[int, ...], ...] | None:
    """The baseline's generated tokens of every prompt from its quality run (a generate
    workload's ``every_tokens``), for the target's quality run to score teacher-forced;
    None where the baseline's first run failed or generated nothing."""
    first = done.get("baseline") or []
    if not first or not first[0].ok:
        return None
    tokens = first[0].output_tensors().get(EVERY_TOKENS)
    if tokens is None or tokens.ndim != 2 or floating(tokens):
        return None
    return tuple(tuple(int(x) for x in row) for row in tokens.tolist())


def _compliance_fits(orch: Orchestrator, plan: MeasurePlan) -> bool:
    """Whether the two compliance runs fit in what is left of the budget (always with
    ``--repeats``, which fixes the work instead of the time)."""
    if plan.repeats is not None or orch.tally is None:
        return True
    return budget.fits(orch.elapsed_s(), 2 * orch.tally.next_run_s("target"), plan.budget_s)


def _compare_script(
    request: CompareRequest, *, progress: ProgressSink | None, resuming: bool
) -> Measured:
    """Script mode: the script once per side (or ``--repeats`` times), no compliance runs
    and no fp64 reference (script mode has neither)."""
    plan = replace(request.measure, repeats=request.measure.repeats or 1, compliance=False)
    template, command = _script_template(request.script, plan.timeout_s)
    url = url_out(request.out, resuming)
    out = staging() if url else local(request.out) if request.out else None
    out = out or default_out(command.name)
    launcher = Launcher()
    try:
        preflight((request.baseline, request.target), launcher=launcher)
        _start(request, out, resuming)
    except BaseException:
        launcher.close()
        raise
    sides = {"baseline": request.baseline, "target": request.target}
    with locked(out), Orchestrator(out=out, progress=progress, launcher=launcher) as orch:
        stop = orch.rounds(
            lambda role, k: template.job(role, sides[role], command.plan(sides[role]), repeat=k),
            plan,
            adaptive_stop(plan, asked=request.measure.repeats is not None),
        )
        measured = orch.sides(orch.finish(stop, plan), plan)
    return Measured(Comparison.measured(out, measured), request, url)


def resume(
    out: Path,
    *,
    progress: ProgressSink | None = None,
    request: CompareRequest | None = None,
    published: str | None = None,
) -> Measured:
    """Finish a comparison that was interrupted: complete bundles are kept and reused,
    partial ones (hidden temporary directories) are removed, missing runs are made.

    ``request`` is the comparison given again (it must match the stored one): a script's
    command is stored with its secret values masked, so resuming one whose command held
    any needs the real command again."""
    if request is not None:
        request.check_resume(out)
    else:
        request = CompareRequest.from_file(out)
    if any(REDACTED in arg for arg in request.script):
        raise ResumeError(
            f"{out / REQUEST_FILE} holds the script's command with secret values masked, "
            "which parity cannot run: give the command again with the comparison (or pass "
            "secrets to the script in environment variables)"
        )
    with locked(out):  # bound to the directory given, whatever out request.json names
        check_resumable(out, {"baseline": request.baseline, "target": request.target})
        return compare(
            replace(request, out=str(out)), progress=progress, resuming=True, published=published
        )


# -- a throughput-latency curve --------------------------------------------------------------


def curve_out(request: CompareRequest) -> Path:
    """Where a throughput-latency curve goes (``OUT/bsN`` a point), its request checked:
    the API measures and judges each point, then writes ``curve.json``."""
    from parity.workloads.names import known_kind

    assert request.workload is not None
    name, kind = request.workload.name, known_kind(request.workload.name)
    if request.out:
        check_fresh(Path(request.out))
    if kind is None:  # described in a worker, not frozen: each point freezes its own
        with Launcher() as launcher:
            workload = prepare_workload(
                request.workload,
                launcher=launcher,
                freeze=False,
                timeout_s=request.measure.timeout_s,
            )
        name, kind = workload.name, workload.kind
    if kind == "train":
        raise OptionError(f"--batch-sizes is for inference and generation; {name} trains")
    out = Path(request.out) if request.out else default_out(name, "curve")
    check_fresh(out)
    return out
