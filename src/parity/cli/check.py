"""``parity check rollback | recovery | soak``: one ``CheckRequest`` each, run by
``parity.checks.run_check``; exit 0 when the check passes, 1 when it fails."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from parity.cli import common as c
from parity.cli.render import show_check

if TYPE_CHECKING:
    from parity.request import CheckName

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="What a migration must still prove: rollback to the baseline, recovery from a "
    "kill, sustained load. Each writes check.json and its bundles under --out; a passing "
    "check ticks the verdict's not-yet-proven list (parity compare --checks DIR).",
)

CheckDevice = Annotated[
    str, typer.Option("--device", metavar="SIDE", help="side spec to check, e.g. neuron")
]
SoakTimeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="seconds beyond --duration before it is stopped (default: 900)",
    ),
]


def _run(ctx: typer.Context, check: CheckName, as_json: bool) -> None:
    from parity.checks import run_check
    from parity.progress import display
    from parity.request import CheckRequest

    request = CheckRequest.build(c.given_options(ctx, check))
    with display(c.stderr()) as progress:
        result = run_check(request, progress=progress)
    show_check(result, as_json=as_json)
    raise typer.Exit(result.exit_code)


@app.command(short_help="train on the target, resume on the baseline")
@c.table_options("rollback")
def rollback(
    ctx: typer.Context,
    workload: c.RequiredWorkload,
    target: Annotated[
        str, typer.Option("--target", metavar="SIDE", help="side that trains first, e.g. cuda")
    ],
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", metavar="SIDE", help="side that resumes (default: cpu)"),
    ] = None,
    as_json: c.AsJson = False,
    **options: object,
) -> None:
    """Train on the target, checkpoint, resume on the baseline, compare the curves.

    K steps on the target, a checkpoint (safetensors + JSON), M steps resumed on the
    baseline, compared with the baseline's uninterrupted K+M steps through the loss gate."""
    _run(ctx, "rollback", as_json)


@app.command(short_help="kill a run after its checkpoint and resume it")
@c.table_options("recovery")
def recovery(
    ctx: typer.Context,
    workload: c.RequiredWorkload,
    device: CheckDevice,
    as_json: c.AsJson = False,
    **options: object,
) -> None:
    """Kill a run after its checkpoint, resume it, compare the curves.

    The parent sends SIGKILL once the worker reports its checkpoint at step K; a fresh
    process resumes from it, and its curve is compared with an uninterrupted run's."""
    _run(ctx, "recovery", as_json)


@app.command(short_help="sustained load: latency drift and memory growth")
@c.table_options("soak")
def soak(
    ctx: typer.Context,
    workload: c.RequiredWorkload,
    device: CheckDevice,
    timeout_s: SoakTimeout = None,
    as_json: c.AsJson = False,
    **options: object,
) -> None:
    """Sustained inference or generation: latency drift and memory growth.

    Slopes with 95% intervals; fails when drift or growth lies beyond its bound."""
    _run(ctx, "soak", as_json)
