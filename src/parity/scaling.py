"""Multi-device scaling: one side at several process counts, as torchrun jobs.

``parity scale WORKLOAD --device SIDE --scaling 1,2,4`` runs the side with ``nproc=N``
for each N (same global batch, so the same data per step), and reports per count the
median step time, throughput, efficiency against linear scaling (strong scaling:
``T1 / (N x TN)``) and the all-reduce share of a step. The 1-process and largest runs'
loss curves are compared through the verdict's quality gates.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from parity.bundle import load_bundle, write_json
from parity.errors import UsageError
from parity.judge.verdict import judge
from parity.runner.job import Job
from parity.runner.launch import EventHandler, run_job
from parity.spec import WorkloadSpec, parse_side
from parity.workloads import resolve
from parity.workloads.frozen import freeze


def parse_counts(text: str) -> list[int]:
    try:
        counts = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--scaling {text!r} must be process counts, e.g. 1,2,4") from None
    if not counts or counts[0] < 1:
        raise UsageError(f"--scaling {text!r} needs counts of at least 1, e.g. 1,2,4")
    return counts


def scale(
    wspec: WorkloadSpec,
    side: str,
    counts: list[int],
    out: Path,
    *,
    timeout_s: float = 900.0,
    torchrun: dict[str, Any] | None = None,
    progress: EventHandler | None = None,
) -> dict[str, Any]:
    spec = parse_side(side)
    if spec.nproc is not None:
        raise UsageError(f"side {side!r} already sets nproc: --scaling chooses the counts")
    workload = resolve(wspec)
    if workload.kind != "train":
        raise UsageError(
            f"--scaling needs a training workload (DDP); {workload.name} is {workload.kind}"
        )
    bad = [n for n in counts if workload.batch_size % n]
    if bad:
        raise UsageError(
            f"batch size {workload.batch_size} does not split over {bad} "
            "processes: choose a --batch-size divisible by every count"
        )
    if out.exists() and any(out.iterdir()):
        raise UsageError(
            f"output directory {out} already exists and is not empty: choose a new --out"
        )
    frozen = freeze(workload)
    points: list[dict[str, Any]] = []
    for n in counts:
        side_n = replace(spec, nproc=n if n > 1 else None)
        job = Job(
            role="run",
            side=str(side_n),
            workload=wspec.to_dict(),
            frozen=str(frozen.path),
            fingerprint=frozen.fingerprint,
            parts=frozen.parts,
            description=frozen.description,
            settings=dict(torchrun or {}),
        )
        t0 = time.monotonic()
        run_job(job, out / f"n{n}", timeout_s=timeout_s, on_event=progress)
        bundle = load_bundle(out / f"n{n}")
        point: dict[str, Any] = {
            "nproc": n,
            "status": bundle.status,
            "reason": bundle.manifest.get("reason"),
            "wall_s": time.monotonic() - t0,
        }
        if bundle.ok:
            summary = bundle.metrics.get("summary") or {}
            dist = bundle.metrics.get("distributed") or {}
            point.update(
                median_step_s=summary.get("median"),
                samples_per_s=(bundle.metrics.get("throughput") or {}).get("samples_per_s"),
                allreduce_share=(dist.get("allreduce") or {}).get("share"),
                per_rank=dist.get("per_rank"),
            )
        points.append(point)
    base = next((p for p in points if p["nproc"] == counts[0] and p.get("median_step_s")), None)
    for p in points:
        if base and p.get("median_step_s"):
            ratio = base["median_step_s"] / p["median_step_s"]
            p["speedup"] = ratio * counts[0]
            p["efficiency"] = ratio * counts[0] / p["nproc"]
    report: dict[str, Any] = {
        "side": side,
        "workload": frozen.description,
        "points": points,
        "definition": "strong scaling (same global batch): efficiency = "
        "T1 / (N x TN); all-reduce share = 1 - t(no_sync) / t(step)",
    }
    ok = [p for p in points if p["status"] == "ok"]
    if len(ok) >= 2:
        verdict = judge(
            load_bundle(out / f"n{ok[0]['nproc']}"), load_bundle(out / f"n{ok[-1]['nproc']}")
        )
        report["loss_curves"] = {
            "baseline": f"n{ok[0]['nproc']}",
            "target": f"n{ok[-1]['nproc']}",
            "quality": verdict.quality,
            "passed": verdict.passed,
        }
    report["passed"] = all(p["status"] == "ok" for p in points) and report.get(
        "loss_curves", {}
    ).get("passed", True)
    write_json(out / "scaling.json", report)
    return report
