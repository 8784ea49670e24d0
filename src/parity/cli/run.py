"""``parity run`` and ``parity scan``: one side, once, into a bundle (``RunRequest``,
``api.run``); a scan lists what the side cannot run instead of timing steps."""

from __future__ import annotations

from typing import Annotated

import typer

from parity.cli import common as c
from parity.cli.render import show_run, show_scan

Strict = Annotated[
    bool, typer.Option("--strict", help="exit 1 on any unsupported op or CPU fallback")
]


@c.table_options("run")
def run(
    ctx: typer.Context,
    device: c.Device,
    workload: c.WorkloadArg = None,
    store: c.Store = None,
    **options: object,
) -> None:
    """Run a workload (or a script after --) on one side and write its bundle."""
    from parity.request import RunRequest

    c.use_store(store)
    request = RunRequest.build(c.given_options(ctx, "run"))
    from parity import api
    from parity.progress import display

    with display(c.stderr()) as progress:
        bundle = api.run(request, progress=progress).bundle
    if not bundle.ok:
        c.note(f"{bundle.side} failed: {bundle.manifest.reason}")
        raise typer.Exit(1)
    show_run(bundle)


@c.table_options("scan")
def scan(
    ctx: typer.Context,
    workload: c.RequiredWorkload,
    device: c.Device,
    strict: Strict = False,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
    **options: object,
) -> None:
    """Every op the side cannot run, CPU fallbacks, host syncs and graph breaks, in one pass."""
    from parity.request import RunRequest

    request = RunRequest.build(c.given_options(ctx, "scan"))
    from parity import api
    from parity.progress import display

    with display(c.stderr()) as progress:
        bundle = api.run(request, progress=progress).bundle
    unsupported, fallbacks = show_scan(bundle, as_json=as_json, wide=wide)
    if not bundle.ok:
        c.note(f"{bundle.side} failed: {bundle.manifest.reason}")
        raise typer.Exit(1)
    if strict and (unsupported or fallbacks):
        c.note(f"--strict: {unsupported} unsupported op(s), {fallbacks} fallback(s)")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command(short_help="run one side into a bundle (compare later with diff)")(run)
    app.command(short_help="unsupported ops, fallbacks, host syncs, graph breaks")(scan)
