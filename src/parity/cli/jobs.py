"""A comparison submitted to a Ray cluster (``parity compare --submit``) and followed by
its job id: ``parity status JOB``, ``parity logs JOB [--follow]``, ``parity wait JOB``
(the comparison's exit code). What the job runs on its node is ``parity submitted``
(``parity.cli.compare``). The Jobs client is ``parity.cluster.jobs``."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from parity.cli import common as c
from parity.errors import UsageError

if TYPE_CHECKING:
    from parity.request import CompareRequest

JobId = Annotated[
    str, typer.Argument(metavar="JOB", help="the job id parity compare --submit printed")
]
Dashboard = c.Dashboard
Follow = Annotated[
    bool, typer.Option("--follow", "-f", help="print the job's output as it comes, until it ends")
]


def _out_for_job(request: CompareRequest) -> str:
    """``--out`` of a submitted comparison: a URL, or an absolute path the nodes share."""
    from parity.storage import is_url

    out = request.out
    if out is None or not (is_url(out) or Path(out).is_absolute()):
        raise UsageError(
            "--submit runs the comparison on the cluster: give --out s3://BUCKET/PREFIX (or "
            "an absolute path every node shares) for its results"
        )
    return out


def _sendable(request: CompareRequest) -> None:
    """What a job on another machine cannot read is refused before it is submitted."""
    if request.script:
        raise UsageError("--submit runs workloads, not scripts: drop --submit or the script")
    if request.checks:
        raise UsageError("--submit cannot send --checks directories: drop --submit or --checks")
    data = request.workload.data if request.workload is not None else None
    if data and not Path(data.split(":", 1)[0]).is_absolute():
        raise UsageError(
            f"--submit: --data {data} is a path on this machine: give an absolute path every "
            "node shares"
        )


def _store_for_job(store: str | None) -> str | None:
    """The index the job writes to: ``--store`` (or ``$PARITY_STORE``) where it is a
    database URL without a password (the nodes supply it), else the node's own."""
    import os

    from parity.safety.urls import refusal, scheme

    given = store or os.environ.get("PARITY_STORE", "").strip() or None
    if given is None or scheme(given) is None:
        return None  # an SQLite file of this machine: the job's node keeps its own
    if refusal(given) is not None:
        raise UsageError(
            "--submit sends the index's URL to the cluster: give it without the password "
            "(the nodes read PGPASSWORD or ~/.pgpass)"
        )
    return given


def submit(request: CompareRequest, dashboard: str | None, store: str | None) -> None:
    """The comparison submitted as a Ray Job; its id and how to follow it, at once."""
    from dataclasses import replace

    from parity.cluster import jobs
    from parity.cluster.code import user_code
    from parity.plugins import is_file_workload

    if request.cluster is None:
        raise UsageError("--submit needs --cluster ray://HOST:PORT (the cluster to run on)")
    _sendable(request)
    out = _out_for_job(request)
    where = jobs.dashboard_of(dashboard, request.cluster.address)
    sent = _store_for_job(store)
    with tempfile.TemporaryDirectory(prefix="parity-submit-") as tmp:
        workdir = Path(tmp)
        workload = request.workload
        if workload is not None and is_file_workload(workload.name):
            from parity.cluster.node import write_files

            files = user_code(workload) or {}  # the file's directory, under code/ there
            write_files(workdir / "code", files)
            factory = workload.name.rpartition(":")[2]
            name = Path(workload.name.rpartition(":")[0]).name
            request = replace(request, workload=replace(workload, name=f"code/{name}:{factory}"))
        request.save(workdir)
        title = request.workload.name if request.workload is not None else "compare"
        sub = jobs.Submission(workdir=workdir, out=out, name=title.split(":")[-1], store=sent)
        job_id = jobs.submit(where, sub)
    c.write_out(job_id)
    c.note(
        f"submitted to {where}: parity status {job_id} --dashboard {where} (or logs "
        f"--follow, wait); results: {out}"
    )


def status(job: JobId, dashboard: Dashboard = None) -> None:
    """Where a submitted comparison stands: its state, and its exit code once it ended."""
    from parity.cluster import jobs

    client = jobs.client(jobs.dashboard_of(dashboard))
    c.write_out(jobs.describe(job, jobs.info(client, job)))


def logs(job: JobId, dashboard: Dashboard = None, follow: Follow = False) -> None:
    """What a submitted comparison printed (its progress, then its verdict)."""
    from parity.cluster import jobs

    client = jobs.client(jobs.dashboard_of(dashboard))

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    jobs.logs(client, job, write, follow=follow)


def wait(job: JobId, dashboard: Dashboard = None, as_json: c.AsJson = False) -> None:
    """Wait for a submitted comparison to end; print its verdict; exit with its exit code."""
    from parity.cluster import jobs

    client = jobs.client(jobs.dashboard_of(dashboard))
    code, found = jobs.wait(client, job)
    c.note(jobs.describe(job, found))
    out = (found.metadata or {}).get(jobs.OUT_KEY)
    if code in (0, 1) and out:
        from parity.cli.render import show_verdict
        from parity.report.run import load_run
        from parity.storage import readable

        run = load_run(readable(out))
        show_verdict(run.verdict, c.stdout(), as_json=as_json, wide=False, out=out)
    raise typer.Exit(code)


SHORT_HELP = {
    status: "where a comparison submitted with --submit stands",
    logs: "what a submitted comparison printed (--follow: as it prints)",
    wait: "wait for a submitted comparison; its verdict and exit code",
}


def register(app: typer.Typer) -> None:
    for command, short in SHORT_HELP.items():
        app.command(short_help=short)(command)
