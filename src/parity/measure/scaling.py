"""Multi-device scaling: one side at several process counts, as torchrun jobs.

``parity scale WORKLOAD --device SIDE --scaling 1,2,4`` runs the side with ``nproc=N``
for each N (same global batch, so the same data per step), and reports per count the
median step time, throughput, efficiency against linear scaling (strong scaling:
``T1 / (N x TN)``) and the all-reduce share of a step. The 1-process and largest runs'
loss curves are compared through the verdict's quality gates.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from parity.bundle import Bundle
from parity.errors import OptionError
from parity.measure.orchestrate import (
    JobTemplate,
    Orchestrator,
    Placed,
    ProgressSink,
    check_fresh,
    default_out,
)
from parity.measure.remote import placed_sides
from parity.model.reports import ScalingPoint
from parity.request import ScaleRequest
from parity.runner.launch import Launcher
from parity.runner.prepare import prepare_workload

SCALING_FILE = "scaling.json"
DEFINITION = (
    "strong scaling (same global batch): efficiency = T1 / (N x TN); all-reduce share = "
    "1 - t(no_sync) / t(step)"
)


def _point(nproc: int, bundle: Bundle, wall_s: float) -> ScalingPoint:
    metrics = bundle.metrics if bundle.ok else None
    dist = metrics.distributed if metrics is not None else None
    return ScalingPoint(
        nproc=nproc,
        status=bundle.status,
        reason=bundle.manifest.reason,
        wall_s=wall_s,
        median_step_s=metrics.median_step_s if metrics is not None else None,
        samples_per_s=metrics.throughput.samples_per_s if metrics is not None else None,
        allreduce_share=dist.allreduce.share if dist is not None else None,
    )


def _with_efficiency(points: list[ScalingPoint], first: int) -> list[ScalingPoint]:
    base = next((p for p in points if p.nproc == first and p.median_step_s), None)
    if base is None or base.median_step_s is None:
        return points
    out = []
    for p in points:
        if p.median_step_s:
            ratio = base.median_step_s / p.median_step_s
            p = replace(p, speedup=ratio * first, efficiency=ratio * first / p.nproc)
        out.append(p)
    return out


def _run_counts(
    request: ScaleRequest,
    template: JobTemplate,
    out: Path,
    launcher: Launcher,
    progress: ProgressSink | None,
    placed: Mapping[str, Placed],
) -> tuple[list[ScalingPoint], dict[int, Bundle]]:
    """One torchrun job per process count, in order (on a cluster, every count on the one
    node ``placed``: one with the largest count's resource)."""
    points, bundles = [], {}
    as_run = {"run": placed["scale"]} if "scale" in placed else {}  # the jobs' role
    with Orchestrator(out=out, progress=progress, launcher=launcher, placed=as_run) as orch:
        for n in request.counts:
            side = replace(request.side, nproc=n if n > 1 else None)
            t0 = time.monotonic()
            job = template.job("run", side, torchrun=request.torchrun)
            bundles[n] = orch.run(job, out / f"n{n}", label=f"nproc={n}")
            points.append(_point(n, bundles[n], time.monotonic() - t0))
    return points, bundles


def _check_train(name: str, kind: str | None) -> None:
    if kind is not None and kind != "train":
        raise OptionError(f"--scaling needs a training workload (DDP); {name} is {kind}")


def measure_counts(request: ScaleRequest, *, progress: ProgressSink | None = None) -> Scaled:
    """Run the workload at each process count (the API judges the loss curves and writes
    the report)."""
    from parity.workloads.names import known_kind

    _check_train(request.workload.name, known_kind(request.workload.name))
    if request.out:
        check_fresh(Path(request.out))
    widest = replace(request.side, nproc=max(request.counts))
    with (
        placed_sides(request.cluster, {"scale": widest}, request.workload) as placed,
        Launcher() as launcher,  # the workload is prepared by a worker, never here
    ):
        workload = prepare_workload(  # the side pre-flighted in the same job
            request.workload,
            launcher=launcher,
            timeout_s=request.timeout_s,
            sides=(request.side,),
            cluster=request.cluster,
        )
        _check_train(workload.name, workload.kind)
        batch = workload.batch_size or 1
        bad = [n for n in request.counts if batch % n]
        if bad:
            raise OptionError(
                f"batch size {batch} does not split over {bad} processes: choose a "
                "--batch-size divisible by every count"
            )
        out = Path(request.out) if request.out else default_out(workload.name, "scaling")
        check_fresh(out)
        template = JobTemplate.of(request.workload, workload, timeout_s=request.timeout_s)
        points, bundles = _run_counts(request, template, out, launcher, progress, placed)
    return Scaled(out, workload.name, _with_efficiency(points, request.counts[0]), bundles)


class Scaled(NamedTuple):
    """What ``measure_counts`` ran: where, the workload's name, a point and a bundle a count."""

    out: Path
    workload: str
    points: list[ScalingPoint]
    bundles: dict[int, Bundle]
