"""``parity check rollback | recovery | soak``: one ``CheckRequest`` each, run by
``parity.checks.run_check``; exit 0 when the check passes, 1 when it fails."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from parity.cli import common as c
from parity.cli.render import show_check

if TYPE_CHECKING:
    from parity.request import CheckRequest

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="What a migration must still prove: rollback to the baseline, recovery from a "
    "kill, sustained load. Each writes check.json and its bundles under --out; a passing "
    "check ticks the verdict's not-yet-proven list (parity compare --checks DIR).",
)

K = Annotated[
    int | None,
    typer.Option("--k", metavar="K", help="steps before the checkpoint (default: half the steps)"),
]
M = Annotated[
    int | None,
    typer.Option("--m", metavar="M", help="steps after the checkpoint (default: the rest)"),
]
CheckDevice = Annotated[
    str, typer.Option("--device", metavar="SIDE", help="side spec to check, e.g. neuron")
]
Duration = Annotated[
    str | None,
    typer.Option(
        "--duration", metavar="DURATION", help="how long to run: 30s, 10m, 1h, 1h30m (default: 10m)"
    ),
]
MaxDrift = Annotated[
    float | None,
    typer.Option(
        "--max-drift",
        metavar="FRACTION",
        help="latency drift bound, relative per hour (default: 0.1 = 10%/h)",
    ),
]
MaxHost = Annotated[
    float | None,
    typer.Option(
        "--max-host-growth",
        metavar="MIB",
        help="host RSS growth bound, MiB per minute (default: 1)",
    ),
]
MaxDevice = Annotated[
    float | None,
    typer.Option(
        "--max-device-growth",
        metavar="MIB",
        help="device allocated growth bound, MiB per minute (default: 1)",
    ),
]
Warmup = Annotated[
    float | None,
    typer.Option(
        "--warmup",
        metavar="FRACTION",
        help="fraction of the run left out of the slopes (default: 0.1)",
    ),
]
SoakTimeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="seconds beyond --duration before it is stopped (default: 900)",
    ),
]


def _run(request: CheckRequest, as_json: bool) -> None:
    from parity.checks import run_check
    from parity.progress import display

    with display(c.stderr()) as progress:
        result = run_check(request, progress=progress)
    show_check(result, as_json=as_json)
    raise typer.Exit(result.exit_code)


@app.command(short_help="train on the target, resume on the baseline")
@c.with_options(c.WORKLOAD, c.RUNNING)
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
    k: K = None,
    m: M = None,
    as_json: c.AsJson = False,
    **options: object,
) -> None:
    """Train on the target, checkpoint, resume on the baseline, compare the curves.

    K steps on the target, a checkpoint (safetensors + JSON), M steps resumed on the
    baseline, compared with the baseline's uninterrupted K+M steps through the loss gate."""
    from parity.request import CheckRequest

    o = c.given_options(ctx)
    request = CheckRequest.from_options("rollback", o, side=target, baseline=baseline, k=k, m=m)
    _run(request, as_json)


@app.command(short_help="kill a run after its checkpoint and resume it")
@c.with_options(c.WORKLOAD, c.RUNNING)
def recovery(
    ctx: typer.Context,
    workload: c.RequiredWorkload,
    device: CheckDevice,
    k: K = None,
    m: M = None,
    as_json: c.AsJson = False,
    **options: object,
) -> None:
    """Kill a run after its checkpoint, resume it, compare the curves.

    The parent sends SIGKILL once the worker reports its checkpoint at step K; a fresh
    process resumes from it, and its curve is compared with an uninterrupted run's."""
    from parity.request import CheckRequest

    o = c.given_options(ctx)
    _run(CheckRequest.from_options("recovery", o, side=device, k=k, m=m), as_json)


@app.command(short_help="sustained load: latency drift and memory growth")
@c.with_options(c.WORKLOAD, c.RUNNING)
def soak(
    ctx: typer.Context,
    workload: c.RequiredWorkload,
    device: CheckDevice,
    duration: Duration = None,
    max_drift: MaxDrift = None,
    max_host_growth: MaxHost = None,
    max_device_growth: MaxDevice = None,
    warmup: Warmup = None,
    timeout_s: SoakTimeout = None,
    as_json: c.AsJson = False,
    **options: object,
) -> None:
    """Sustained inference or generation: latency drift and memory growth.

    Slopes with 95% intervals; fails when drift or growth lies beyond its bound."""
    from parity.request import CheckRequest

    bounds = {k: v for k, v in ctx.params.items() if k in SOAK_BOUNDS and v is not None}
    o = c.given_options(ctx)
    request = CheckRequest.from_options("soak", o, side=device, duration=duration, bounds=bounds)
    _run(request, as_json)


SOAK_BOUNDS = ("max_drift", "max_host_growth", "max_device_growth", "warmup")
