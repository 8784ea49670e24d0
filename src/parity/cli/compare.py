"""``parity compare``: a workload (or a script after ``--``) on a baseline and a target.

One request (``parity.request.compare_request``, as the Python API builds it) from the
options, a plan file (``--plan``, the options given beside it replace its values) or,
with ``--resume``, the stored ``request.json``; then ``api.compare``,
``api.compare_curve`` (``--batch-sizes``) or ``api.resume``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from parity.cli import common as c
from parity.cli.render import show_curve, show_result
from parity.errors import UsageError

if TYPE_CHECKING:
    from parity.api import ComparisonResult
    from parity.request import CompareRequest

Resume = Annotated[
    str | None,
    typer.Option(
        "--resume",
        metavar="DIR|URL",
        help="finish an interrupted compare in this directory, or at the --out URL it "
        "published to, reusing its complete bundles and running the missing and failed ones "
        "(other options must match the stored ones)",
    ),
]
Plan = Annotated[
    Path | None,
    typer.Option(
        "--plan",
        metavar="FILE",
        help="a plan file (parity init writes one); options given beside it replace its values",
    ),
]
Submit = Annotated[
    bool,
    typer.Option(
        "--submit",
        help="on a Ray cluster: submit the comparison as a Ray Job and return at once with its "
        "id (parity status, logs, wait follow it); --out must be a URL or a shared path",
    ),
]


@c.table_options("compare")
def compare(
    ctx: typer.Context,
    workload: c.WorkloadArg = None,
    plan: Plan = None,
    resume: Resume = None,
    store: c.Store = None,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
    verbose: c.Verbose = False,
    submit: Submit = False,
    dashboard: c.Dashboard = None,
    **options: object,
) -> None:
    """Run a workload on a baseline and a target in fresh, interleaved processes; judge.

    Script mode: parity compare --target cpu+bf16 -- python train.py --device {device}
    runs an unmodified training script once per side (see docs/script-mode.md).

    Rarer options (cluster, torchrun, the judge's extra inputs, MLflow): docs/cli.md."""
    from parity.measure.remote import resume_target
    from parity.request import compare_request

    c.use_store(store)
    if resume is None and plan is None:
        _start_early(ctx, workload)
    where, published = resume_target(resume) if resume is not None else (None, None)
    request = compare_request(c.given_options(ctx, "compare"), plan, where)
    if submit or dashboard is not None:
        if resume is not None or not submit:
            raise UsageError(
                "--dashboard goes with --submit"
                if not submit
                else "--submit starts a comparison; --resume finishes one here: drop one of them"
            )
        from parity.cli.jobs import submit as submit_job

        submit_job(request, dashboard, store)
        return
    run_request(request, where, published, as_json=as_json, wide=wide, verbose=verbose)


def run_request(
    request: CompareRequest,
    where: Path | None = None,
    published: str | None = None,
    *,
    as_json: bool = False,
    wide: bool = False,
    verbose: bool = False,
) -> None:
    """The comparison (resumed from ``where``) run here, shown, and its exit code."""
    curve_out, results = _run(request, where, published)
    if curve_out is not None:
        show_curve(curve_out, results, as_json=as_json, wide=wide)
    else:
        show_result(results[0], as_json=as_json, wide=wide, verbose=verbose)
    raise typer.Exit(max(r.verdict.exit_code for r in results))


def _start_early(ctx: typer.Context, workload: str | None) -> None:
    """Where no target is given, reading the request asks a subprocess for the machine's
    accelerator (``values.default_target``): the zygote this machine's sides will fork
    from is launched first, so that its own import of torch runs beside that one
    (``runner.kept.launch_early``). Not for a script, a plan, a resumed comparison or
    sides on a cluster's nodes, whose workers fork from no zygote here or whose
    workload is only known later."""
    if c.given(ctx, "target") or c.given(ctx, "cluster") or c.script_of(ctx):
        return
    from parity.errors import UsageError
    from parity.runner.kept import launch_early
    from parity.workloads.names import DEFAULT, check_workload_name, preload_modules

    name = workload or DEFAULT
    try:
        check_workload_name(name)  # a name that names nothing is refused, with no zygote
    except UsageError:
        return
    launch_early(preload_modules(name))


def _run(
    request: CompareRequest, resume: Path | None, published: str | None = None
) -> tuple[Path | None, list[ComparisonResult]]:
    """The API call the request asks for, with the progress display: a resumed, a curve
    (the curve's directory and one result per batch size) or a plain comparison."""
    from parity import api
    from parity.progress import display

    with display(c.stderr()) as progress:
        if resume is not None:
            # the request given (a script's real command) or the stored one, checked
            found = api.resume(resume, progress=progress, request=request, published=published)
            return None, [found]
        if request.batch_sizes:
            return api.compare_curve(request, progress=progress)
        return None, [api.compare(request, progress=progress)]


def submitted() -> None:
    """What a submitted job runs on its node: the stored request, compared here."""
    from parity.cluster.jobs import check_versions
    from parity.request import CompareRequest

    check_versions()
    home = _settled()
    request = CompareRequest.from_file(home)
    run_request(request)


def _settled() -> Path:
    """The job's working directory copied to a private one, and made the current one.
    Ray unpacks a job's working directory per node and may unpack it again (a new
    directory under the same name) when the job's driver joins the cluster: the
    processes this one starts would inherit a removed directory (torch's MKL then
    refuses to load)."""
    import os
    import shutil

    from parity.safety import scratch

    home = scratch.make("submitted")
    shutil.copytree(Path.cwd(), home, dirs_exist_ok=True)
    os.chdir(home)
    return home
