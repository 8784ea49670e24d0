"""``parity compare``: a workload (or a script after ``--``) on a baseline and a target.

One request (``CompareRequest``) from the options, a plan file (``--plan``, the options
given beside it replace its values) or, with ``--resume``, the stored ``request.json``;
then ``api.compare``, ``api.compare_curve`` (``--batch-sizes``) or ``api.resume``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from parity.cli import common as c
from parity.cli.render import show_curve, show_result

if TYPE_CHECKING:
    from parity.request import CompareRequest
    from parity.results import ComparisonResult

Repeats = Annotated[
    int | None,
    typer.Option(
        "--repeats",
        metavar="N",
        help="fresh processes per side (default: adaptive, see --precision, --budget)",
    ),
]
Precision = Annotated[
    float | None,
    typer.Option(
        "--precision",
        metavar="FRACTION",
        help="stop when the speed ratio's 95% interval is within this fraction (default: 0.02)",
    ),
]
Budget = Annotated[
    float | None,
    typer.Option(
        "--budget",
        metavar="SECONDS",
        help="seconds for measuring after set-up: the fp64 reference, the rounds and the "
        "compliance runs; a round that would not fit is not started (default: 30)",
    ),
]
Compliance = Annotated[
    bool | None,
    typer.Option(
        "--compliance/--no-compliance",
        help="run the target's re-seeded and identical-input checks (default: on)",
        show_default=False,
    ),
]
BatchSizes = Annotated[
    str | None,
    typer.Option(
        "--batch-sizes",
        metavar="N,N,...",
        help="inference and generation: one comparison per batch size, e.g. 1,8,32, and the "
        "throughput-latency curve",
    ),
]
Resume = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        metavar="DIR",
        help="finish an interrupted compare in this directory, reusing its complete bundles "
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


def build_request(ctx: typer.Context, plan: Path | None, resume: Path | None) -> CompareRequest:
    """The request the options (and plan file) describe; with ``--resume``, the stored
    one, which the options given beside it must match (``api.check_resume``)."""
    from parity.request import CompareOptions, CompareRequest

    options = c.given_options(ctx)
    if resume is not None and plan is None and options == CompareOptions():
        return CompareRequest.from_file(resume)
    if plan is not None:
        request = CompareRequest.from_plan(plan, options)
    else:
        request = CompareRequest.from_options(options)
    if resume is not None:
        from parity import api

        api.check_resume(resume, request)
    return request


Mlflow = Annotated[
    str | None,
    typer.Option(
        "--mlflow",
        metavar="[URI]",
        help="log the comparison as an MLflow run, at URI (http(s)://HOST:PORT, "
        "sqlite:///FILE, file:DIR) or, given alone, MLflow's default "
        "(MLFLOW_TRACKING_URI, else ./mlruns); needs parity[mlflow]",
    ),
]
MlflowExperiment = Annotated[
    str | None,
    typer.Option(
        "--mlflow-experiment", metavar="NAME", help="the MLflow experiment (default: parity)"
    ),
]
LOGGING: dict[str, object] = {"mlflow": Mlflow, "mlflow_experiment": MlflowExperiment}

MEASURING: dict[str, object] = {
    "batch_sizes": BatchSizes,
    "repeats": Repeats,
    "precision": Precision,
    "budget_s": Budget,
    "compliance": Compliance,
}


@c.with_options(c.WORKLOAD, c.RUNNING, MEASURING, c.TORCHRUN, c.JUDGING, LOGGING)
def compare(
    ctx: typer.Context,
    workload: c.WorkloadArg = None,
    baseline: c.Baseline = None,
    target: c.Target = None,
    plan: Plan = None,
    resume: Resume = None,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
    **options: object,
) -> None:
    """Run a workload on a baseline and a target in fresh, interleaved processes; judge.

    Script mode: parity compare --target cpu+bf16 -- python train.py --device {device}
    runs an unmodified training script once per side (see docs/script-mode.md)."""
    request = build_request(ctx, plan, resume)
    curve_out, results = _run(request, resume)
    if curve_out is not None:
        show_curve(curve_out, results, as_json=as_json, wide=wide)
    else:
        show_result(results[0], as_json=as_json, wide=wide)
    raise typer.Exit(max(r.verdict.exit_code for r in results))


def _run(
    request: CompareRequest, resume: Path | None
) -> tuple[Path | None, list[ComparisonResult]]:
    """The API call the request asks for, with the progress display: a resumed, a curve
    (the curve's directory and one result per batch size) or a plain comparison."""
    from parity import api
    from parity.progress import display

    with display(c.stderr()) as progress:
        if resume is not None:
            return None, [api.resume(resume, progress=progress)]
        if request.batch_sizes:
            return api.compare_curve(request, progress=progress)
        return None, [api.compare(request, progress=progress)]
