"""The Python API the CLI calls: ``compare``, ``run``, ``scan``, ``diff``, ``report``.

Each takes a validated request (``parity.request``), hands its jobs to the orchestrator,
judges what came back and writes the verdict, the report and the index entry. Bad input
is refused before anything is written; a side that fails is a result, not an error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from parity.bundle import Bundle, SideRuns, load_bundle, load_side, write_doc
from parity.errors import OptionError, ResumeError
from parity.model import SCHEMA_VERSION
from parity.model.job import Job
from parity.model.side import MeasurePlan, Stop
from parity.model.verdict import CostInputs, JudgeInputs, Price, Role, Verdict
from parity.orchestrate import (
    EXPECTED_DIR,
    REFERENCE_DIR,
    JobTemplate,
    Orchestrator,
    ProgressSink,
    adaptive_stop,
    check_fresh,
    check_resumable,
    clear_partial,
    compliance_runs,
    default_out,
    expected_run,
    fp64_reference,
    prepare_workload,
    timing_plan,
)
from parity.paths import locked
from parity.redact import REDACTED
from parity.remote import placed_sides, relocated, url_out
from parity.request import REQUEST_FILE, CompareRequest, RunRequest
from parity.runner.launch import Launcher
from parity.storage import is_url, local, publish, readable, shown, staging

if TYPE_CHECKING:
    from parity.spec import SideSpec, WorkloadSpec
    from parity.workloads.script import ScriptCommand

INPUTS_FILE = "inputs.json"
VERDICT_FILE = "verdict.json"
CURVE_FILE = "curve.json"


@dataclass(frozen=True)
class CompareResult:
    """A comparison's directory, its sides and verdict, and the report where it was written."""

    out: Path
    baseline: SideRuns
    target: SideRuns
    verdict: Verdict
    report: Path | None = None
    #: where the comparison was published (``--out URL``); ``out`` is its local copy
    url: str | None = None


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
) -> JobTemplate:
    """The request's workload (or ``spec``) resolved and frozen by a worker: user code
    never runs in this process."""
    spec = spec or request.workload
    assert spec is not None
    sides: tuple[SideSpec, ...] = (
        (request.side,) if isinstance(request, RunRequest) else (request.baseline, request.target)
    )
    if request.cluster is not None:  # they run on their nodes, which this machine need not be
        sides = ()
    prepared = prepare_workload(spec, launcher=launcher, timeout_s=timeout_s, sides=sides)
    return JobTemplate.of(spec, prepared, timeout_s=timeout_s)


def run(request: RunRequest, *, progress: ProgressSink | None = None) -> Bundle:
    """Run one side once (or scan it) into the bundle ``request.out``."""
    from parity.store import index_quietly

    url = url_out(request.out)
    out = staging() if url else local(request.out) if request.out else None
    out = out or default_out(request.name, request.mode)
    check_fresh(out)
    if request.cluster is not None and request.script:
        raise OptionError("--cluster runs workloads, not scripts: drop --cluster or the script")
    roles: dict[str, SideSpec] = {request.mode: request.side}
    with placed_sides(request.cluster, roles) as placed, Launcher() as launcher:
        if request.script:
            template, command = _script_template(request.script, request.timeout_s)
            plan = command.plan(request.side)
            job = template.job("run", request.side, mode="script", script=plan)
        else:
            template = _prepare(request, launcher, timeout_s=request.timeout_s)
            job = template.job(
                request.mode,
                request.side,
                mode=request.job_mode,
                capture=request.mode == "run",  # the numerics probe, for a later diff
                torchrun=request.torchrun,
            )
        if out.is_dir():
            out.rmdir()
        with Orchestrator(out=out, progress=progress, launcher=launcher, placed=placed) as orch:
            bundle = orch.run(job, out, label=request.mode)
    if url:
        publish(out, url)
    if request.mode == "run":
        index_quietly(url or out)
    return bundle


# -- a comparison ----------------------------------------------------------------------------


def _start(request: CompareRequest, out: Path, resuming: bool) -> None:
    from parity.checks.common import store_checks

    if resuming:
        clear_partial(out)
        for stale in (VERDICT_FILE, INPUTS_FILE):
            (out / stale).unlink(missing_ok=True)
        return
    check_fresh(out)
    out.mkdir(parents=True, exist_ok=True)
    request.save(out)
    store_checks(out, [Path(p) for p in request.checks])


def compare(
    request: CompareRequest, *, progress: ProgressSink | None = None, resuming: bool = False
) -> CompareResult:
    """Measure both sides in fresh, interleaved processes and judge them."""
    if request.batch_sizes:
        raise OptionError("a throughput-latency curve is compare_curve's: use parity compare")
    if request.script:
        return _compare_script(request, progress=progress, resuming=resuming)
    from parity.cache import cache_root

    url = url_out(request.out, resuming)
    if url:  # measured and judged in a local staging directory, then published
        request = replace(request, out=str(staging()))
    if request.out and not resuming:
        check_fresh(local(request.out))  # before a worker starts
    plan = request.measure
    began = time.monotonic()  # set-up: preparing the workload (and the zygote) counts
    roles = {"baseline": request.baseline, "target": request.target}
    with placed_sides(request.cluster, roles) as placed, Launcher() as launcher:
        assert request.workload is not None
        launcher.warm(request.workload.name)  # the zygote imports while this process does
        from parity.checks.common import read_checks  # (torch, for the judge)

        read_checks([Path(p) for p in request.checks])  # validated before anything is written
        template = _prepare(request, launcher, timeout_s=plan.timeout_s)
        reseeded = _reseeded(request, launcher) if plan.compliance else None
        out = local(request.out) if request.out else default_out(template.description.name)
        _start(request, out, resuming)
        with (
            locked(out),
            Orchestrator(
                out=out, progress=progress, launcher=launcher, started=began, placed=placed
            ) as orch,
        ):
            orch.start_budget(
                template.job("baseline", request.baseline),
                template.job("target", request.target),
            )
            cache = cache_root()
            # the whole run in fp64 (a new cache: references before it hold the probe only)
            reference = fp64_reference(orch, template, cache / f"reference-v{SCHEMA_VERSION}-run")
            stop = _measure(request, orch, template, reseeded)
            expected = _expected(orch, template, out, cache / f"expected-v{SCHEMA_VERSION}")
            orch.finish(stop, request.measure)
    result = conclude(out, request.judge, reference=reference, expected=expected, url=url)
    return _logged(request, result)


def _expected(orch: Orchestrator, template: JobTemplate, out: Path, cache: Path) -> Bundle | None:
    """The expected-error run at the precision the target's first bundle ran in (none for
    an fp32 target, or a target that failed). A target on the CPU at that precision and
    nothing else (``cpu+bf16``) is its own expected-error run: its quality run is copied
    to ``OUT/expected`` instead of running the same again."""
    from parity.judge.numerics import bundle_precision, expected_side
    from parity.orchestrate import EXPECTED_DIR, copy_bundle

    target = load_side(out / "target")
    if not target.ok:
        return None
    first = target.ok[0]
    side = expected_side(first.side, bundle_precision(first))
    if side is None:
        return None
    if side != first.side:
        return expected_run(orch, template, side, cache)
    dest = out / EXPECTED_DIR
    if not (dest / "manifest.json").is_file():
        copy_bundle(first.path, dest)
    orch.notes.append(
        f"no expected-error run: the target ({first.side}) is that run's own device and "
        "settings, so its quality run is the expected-error run"
    )
    return load_bundle(dest)


def _logged(request: CompareRequest, result: CompareResult) -> CompareResult:
    """The finished comparison logged to MLflow where the request asks (a failure to log
    warns and keeps the results)."""
    if request.mlflow is not None:
        from parity.report.mlflow import log_comparison_quietly

        log_comparison_quietly(
            result.out,
            tracking_uri=request.mlflow.tracking_uri,
            experiment=request.mlflow.experiment,
        )
    return result


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
) -> Stop:
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
        return template.job(
            role, sides[role], repeat=k, capture=k == 0, torchrun=plan.torchrun, steps=steps
        )

    stop = orch.rounds(
        job,
        plan,
        adaptive_stop(plan, runs_after=runs_after),
        after_first=timing_plan(orch, plan, runs_after=runs_after, shorten=shorten),
    )
    if reseeded is not None and stop.reason != "failure":
        if _compliance_fits(orch, plan):
            timing = orch.timing.get("target")
            steps = timing.steps if timing is not None and timing.shortened else None
            compliance_runs(orch, request.target, reseeded, template, steps=steps)
        else:
            orch.notes.append(
                f"the compliance runs were dropped: the budget ({plan.budget_s:g} s) could not "
                f"hold them after {len(orch.tally.done['target']) if orch.tally else 0} "
                "processes a side; a larger --budget runs them"
            )
    return stop


def _compliance_fits(orch: Orchestrator, plan: MeasurePlan) -> bool:
    """Whether the two compliance runs fit in what is left of the budget (always with
    ``--repeats``, which fixes the work instead of the time)."""
    if plan.repeats is not None or orch.tally is None:
        return True
    return orch.elapsed_s() + 2 * orch.tally.next_run_s("target") <= plan.budget_s


def _compare_script(
    request: CompareRequest, *, progress: ProgressSink | None, resuming: bool
) -> CompareResult:
    """Script mode: the script once per side (or ``--repeats`` times), no compliance runs
    and no fp64 reference (script mode has neither)."""
    if request.cluster is not None:
        raise OptionError("--cluster runs workloads, not scripts: drop --cluster or the script")
    plan = replace(request.measure, repeats=request.measure.repeats or 1, compliance=False)
    template, command = _script_template(request.script, plan.timeout_s)
    url = url_out(request.out, resuming)
    out = staging() if url else local(request.out) if request.out else None
    out = out or default_out(command.name)
    _start(request, out, resuming)
    sides = {"baseline": request.baseline, "target": request.target}
    with locked(out), Orchestrator(out=out, progress=progress) as orch:
        stop = orch.rounds(
            lambda role, k: template.job(
                role, sides[role], mode="script", repeat=k, script=command.plan(sides[role])
            ),
            plan,
            adaptive_stop(plan, asked=request.measure.repeats is not None),
        )
        orch.finish(stop, plan)
    return _logged(request, conclude(out, request.judge, reference=None, expected=None, url=url))


def resume(
    out: Path, *, progress: ProgressSink | None = None, request: CompareRequest | None = None
) -> CompareResult:
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
        return compare(replace(request, out=str(out)), progress=progress, resuming=True)


def resolve_prices(cost: CostInputs, a: SideRuns, b: SideRuns) -> CostInputs:
    """Prices for sides without one, from ``devices/specs.toml`` by the device name each
    bundle recorded: resolved here, before judging, so a verdict depends on its inputs."""
    from parity.devices.specs import price_for

    prices = dict(cost.prices)
    for role, side in (("baseline", a), ("target", b)):
        env = side.first.manifest.environment
        if role in prices or env is None:
            continue
        found = price_for(env.device.name)
        if found is not None:
            prices[role] = Price(
                usd_per_hour=found.usd_per_hour,
                accelerators=found.accelerators,
                instance=found.instance,
                source=found.source or "specs.toml",
            )
    return replace(cost, prices=prices)


def conclude(
    out: Path,
    inputs: JudgeInputs,
    *,
    reference: Bundle | None,
    expected: Bundle | None,
    url: str | None = None,
) -> CompareResult:
    """Judge the sides measured in ``out``; write inputs.json, verdict.json, the report,
    publish them at ``url`` (if given) and index them (the report and the index after the
    results are on disk: their failures only warn)."""
    from parity.checks.common import checked_for
    from parity.judge.verdict import judge
    from parity.report.run import report_after_compare
    from parity.store import index_quietly

    a, b = load_side(out / "baseline"), load_side(out / "target")
    inputs = replace(
        inputs,
        cost=resolve_prices(inputs.cost, a, b),
        checked=checked_for(a.first, b.first, roots=[out]),
    )
    write_doc(out / INPUTS_FILE, inputs)
    verdict = judge(a, b, inputs=inputs, reference=reference, expected=expected)
    verdict = relocated(
        verdict, {r: f"{shown(url)}/{r}" for r in ("baseline", "target")} if url else {}
    )
    write_doc(out / VERDICT_FILE, verdict)
    result = CompareResult(
        out=out, baseline=a, target=b, verdict=verdict, url=shown(url) if url else None
    )
    result = replace(result, report=report_after_compare(out))
    if url:
        publish(out, url)
    index_quietly(url or out)
    return result


# -- a throughput-latency curve --------------------------------------------------------------


def compare_curve(
    request: CompareRequest, *, progress: ProgressSink | None = None
) -> tuple[Path, list[CompareResult]]:
    """One comparison per batch size (``OUT/bsN``) and ``curve.json``."""
    from parity.model.reports import Curve, CurvePoint
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
    results = [
        compare(replace(request.with_batch_size(bs), out=str(out / f"bs{bs}")), progress=progress)
        for bs in request.batch_sizes
    ]
    points = tuple(
        CurvePoint.of(bs, r.verdict) for bs, r in zip(request.batch_sizes, results, strict=True)
    )
    from parity.judge.slo import best_batch

    pairs = [(bs, r.verdict) for bs, r in zip(request.batch_sizes, results, strict=True)]
    curve = Curve(batch_sizes=request.batch_sizes, points=points, best=best_batch(pairs))
    write_doc(out / CURVE_FILE, curve)
    return out, results


# -- judging existing bundles ----------------------------------------------------------------


def find_reference(
    *sides: Path, explicit: Path | None = None, name: str = REFERENCE_DIR
) -> Bundle | None:
    """The fp64 reference for a diff: ``--reference``, else ``reference/`` beside a side
    (``name``: ``expected/``, the expected-error run)."""
    if explicit is not None:
        return load_bundle(explicit)
    for side in sides:
        candidate = side.parent / name
        if (candidate / "manifest.json").is_file():
            return load_bundle(candidate)
    return None


def stored_inputs(*sides: Path) -> JudgeInputs:
    """The judge inputs a comparison stored beside its sides (``inputs.json``), if any."""
    from parity.bundle import read_doc

    for side in sides:
        path = side.parent / INPUTS_FILE
        if path.is_file():
            return read_doc(path, JudgeInputs)
    return JudgeInputs()


def diff(
    bundle_a: Path | str,
    bundle_b: Path | str,
    *,
    given: JudgeInputs | None = None,
    reference: Path | str | None = None,
    checks: list[Path] | None = None,
) -> Verdict:
    """Judge two existing bundles (possibly from different machines; paths or URLs).

    Sides from one ``parity compare`` directory are judged with the inputs that compare
    stored (``inputs.json``: allowed differences, target loss, resolved prices,
    operational answers, pinned versions), so the verdict is the same; inputs ``given``
    replace them."""
    from parity.checks.common import checked_for
    from parity.judge.verdict import judge

    where = {
        r: shown(str(u)) for r, u in (("baseline", bundle_a), ("target", bundle_b)) if is_url(u)
    }
    bundle_a, bundle_b = readable(bundle_a), readable(bundle_b)
    reference = readable(reference) if reference is not None else None
    stored = stored_inputs(bundle_a, bundle_b)
    inputs = _override(stored, given)
    a, b = load_side(bundle_a), load_side(bundle_b)
    ref = find_reference(bundle_a, bundle_b, explicit=reference)
    if ref is not None and ref.fingerprint != a.first.fingerprint:
        if reference is not None:
            raise OptionError(
                f"--reference {reference} is the fp64 reference of another workload: pass the "
                "reference/ directory of the same comparison"
            )
        ref = None
    expected = find_reference(bundle_a, bundle_b, name=EXPECTED_DIR)
    if expected is not None and expected.fingerprint != a.first.fingerprint:
        expected = None
    checked = checked_for(a.first, b.first, roots=[bundle_a.parent, bundle_b.parent], extra=checks)
    inputs = replace(inputs, cost=resolve_prices(inputs.cost, a, b), checked=checked)
    return relocated(judge(a, b, inputs=inputs, reference=ref, expected=expected), where)


def _override(stored: JudgeInputs, given: JudgeInputs | None) -> JudgeInputs:
    if given is None:
        return stored
    default = JudgeInputs()
    return JudgeInputs(
        allow=given.allow if given.allow != default.allow else stored.allow,
        target_loss=given.target_loss if given.target_loss is not None else stored.target_loss,
        cost=replace(stored.cost, prices={**stored.cost.prices, **given.cost.prices}),
        operational=stored.operational,
        pins={**stored.pins, **given.pins},
        min_cosine=given.min_cosine
        if given.min_cosine != default.min_cosine
        else stored.min_cosine,
        min_top1=given.min_top1 if given.min_top1 != default.min_top1 else stored.min_top1,
        production=given.production or stored.production,
        slo=given.slo or stored.slo,
        tuning_intended=given.tuning_intended or stored.tuning_intended,
    )


def load_verdict(path: Path) -> Verdict:
    """A ``verdict.json``, decoded strictly (BundleError naming the key path)."""
    from parity.bundle import read_doc

    return read_doc(path, Verdict)
