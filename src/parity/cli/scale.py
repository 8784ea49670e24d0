"""``parity scale``: one side at several process counts as torchrun jobs (``ScaleRequest``,
``parity.api.scale``); exit 0 when every count ran and the loss curves agree."""

from __future__ import annotations

import typer

from parity.cli import common as c
from parity.cli.render import show_scaling


@c.table_options("scale")
def scale(
    ctx: typer.Context,
    workload: c.RequiredWorkload,
    device: c.Device,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
    **options: object,
) -> None:
    """Scaling over process counts as torchrun jobs (DDP): step time, efficiency, all-reduce."""
    from parity.request import ScaleRequest

    request = ScaleRequest.build(c.given_options(ctx, "scale"))
    from parity.api import scale as run_scale
    from parity.progress import display

    with display(c.stderr()) as progress:
        report = run_scale(request, progress=progress)
    show_scaling(report, as_json=as_json, wide=wide)
    raise typer.Exit(0 if report.passed else 1)


def register(app: typer.Typer) -> None:
    app.command(short_help="scaling over process counts as torchrun jobs")(scale)
