"""The Python API the CLI calls: ``run``, ``compare``, ``diff``.

Every input is validated before anything is written, so bad input leaves nothing behind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from parity.bundle import Bundle, SideRuns, load_bundle, load_side, write_json
from parity.errors import UsageError
from parity.judge.verdict import Verdict, judge
from parity.runner.job import Job
from parity.runner.launch import run_job
from parity.runner.measure import Plan, measure
from parity.spec import SideSpec, WorkloadSpec, parse_side
from parity.workloads import resolve
from parity.workloads.base import Workload
from parity.workloads.frozen import FINGERPRINT_PARTS, Frozen, freeze

DEFAULT_TIMEOUT_S = 900.0
ProgressFn = Callable[[str, dict[str, Any]], None]


@dataclass
class CompareResult:
    out: Path
    baseline: SideRuns
    target: SideRuns
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "verdict": self.verdict.to_dict()}


def default_target() -> str:
    """The accelerator PyTorch reports, or ``cpu+bf16`` on a machine without one."""
    import torch

    accel = getattr(torch, "accelerator", None)
    if accel is not None and accel.is_available():
        current = accel.current_accelerator()
        if current is not None and current.type != "cpu":
            return str(current.type)
    return "cpu+bf16"


def parse_allow(items: list[str] | None) -> dict[str, str]:
    """``FIELD`` or ``FIELD=reason`` items into a mapping; unknown fields are usage errors."""
    allow: dict[str, str] = {}
    for item in items or []:
        name, _, reason = item.partition("=")
        name = name.strip()
        if name not in FINGERPRINT_PARTS:
            raise UsageError(
                f"--allow-diff {name!r} is not a fingerprint field: use one of "
                f"{', '.join(FINGERPRINT_PARTS)}"
            )
        allow[name] = reason.strip().strip('"') or "allowed by the user (no reason given)"
    return allow


def _fresh_dir(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(
            f"output directory {path} already exists and is not empty: choose a new --out"
        )


def _job(role: str, side: SideSpec, wspec: WorkloadSpec, frozen: Frozen, repeat: int = 0) -> Job:
    return Job(
        role=role,
        side=str(side),
        workload=wspec.to_dict(),
        frozen=str(frozen.path),
        fingerprint=frozen.fingerprint,
        parts=frozen.parts,
        description=frozen.description,
        repeat=repeat,
    )


def _prepare(wspec: WorkloadSpec) -> tuple[Workload, WorkloadSpec]:
    wspec = _absolute(wspec)
    return resolve(wspec), wspec


def _absolute(wspec: WorkloadSpec) -> WorkloadSpec:
    """A user file's path made absolute, so the worker finds it from any directory."""
    path, sep, attr = wspec.name.rpartition(":")
    if sep and path.endswith(".py"):
        return replace(wspec, name=f"{Path(path).resolve()}:{attr}")
    return wspec


def run(
    wspec: WorkloadSpec,
    side: str,
    out: Path,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: ProgressFn | None = None,
) -> Bundle:
    """Run one side once and return its bundle (status ok or failed)."""
    spec = parse_side(side)
    workload, wspec = _prepare(wspec)
    _fresh_dir(out)
    frozen = freeze(workload)
    if out.is_dir():
        out.rmdir()
    run_job(
        _job("run", spec, wspec, frozen),
        out,
        timeout_s=timeout_s,
        on_event=(lambda e: progress("run", e)) if progress else None,
    )
    return load_bundle(out)


def compare(
    wspec: WorkloadSpec,
    baseline: str,
    target: str,
    *,
    out: Path | None = None,
    allow_diff: list[str] | None = None,
    plan: Plan | None = None,
    progress: ProgressFn | None = None,
) -> CompareResult:
    """Run both sides in fresh, interleaved processes and judge them.

    ``plan`` says how much to measure (fixed repeats, or until a precision or a time
    budget) and whether to run the target's compliance checks.
    """
    plan = plan or Plan()
    side_a, side_b = parse_side(baseline), parse_side(target)
    allow = parse_allow(allow_diff)
    workload, wspec = _prepare(wspec)
    if out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = Path("parity-runs") / f"{stamp}-{workload.name.replace(':', '_').replace('/', '_')}"
    _fresh_dir(out)
    frozen = freeze(workload)
    sides = {"baseline": side_a, "target": side_b}
    compliance: dict[str, Job] = {}
    if plan.compliance:
        reseeded_spec = replace(wspec, seed=wspec.seed + 1)
        reseeded = freeze(resolve(reseeded_spec))
        compliance["reseeded"] = _job("target", side_b, reseeded_spec, reseeded)
        same = _job("target", side_b, wspec, frozen)
        same.settings["same_input"] = True
        compliance["same-input"] = same
    out.mkdir(parents=True, exist_ok=True)
    measure(
        lambda role, k: _job(role, sides[role], wspec, frozen, repeat=k),
        out,
        plan,
        lambda label: partial(progress, label) if progress else None,
        compliance,
    )
    a, b = load_side(out / "baseline"), load_side(out / "target")
    verdict = judge(a, b, allow=allow)
    write_json(out / "verdict.json", verdict.to_dict())
    return CompareResult(out=out, baseline=a, target=b, verdict=verdict)


def parse_batch_sizes(text: str) -> list[int]:
    """``1,8,32`` into sorted distinct batch sizes; a usage error names the problem."""
    try:
        sizes = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--batch-sizes {text!r} must be whole numbers, e.g. 1,8,32") from None
    if not sizes or sizes[0] < 1:
        raise UsageError(f"--batch-sizes {text!r} needs batch sizes of at least 1, e.g. 1,8,32")
    return sizes


def compare_curve(
    wspec: WorkloadSpec,
    baseline: str,
    target: str,
    batch_sizes: list[int],
    *,
    out: Path | None = None,
    allow_diff: list[str] | None = None,
    plan: Plan | None = None,
    progress: ProgressFn | None = None,
) -> tuple[Path, list[CompareResult], dict[str, Any]]:
    """One comparison per batch size (``OUT/bsN``) and the throughput-latency curve."""
    parse_side(baseline), parse_side(target), parse_allow(allow_diff)
    workload, _ = _prepare(wspec)
    if workload.kind == "train":
        raise UsageError(f"--batch-sizes is for inference and generation; {workload.name} trains")
    if out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = Path("parity-runs") / f"{stamp}-{workload.name}-curve"
    _fresh_dir(out)
    results = [
        compare(
            replace(wspec, batch_size=bs),
            baseline,
            target,
            out=out / f"bs{bs}",
            allow_diff=allow_diff,
            plan=plan,
            progress=progress,
        )
        for bs in batch_sizes
    ]
    curve = {"batch_sizes": batch_sizes, "points": [_curve_point(r) for r in results]}
    write_json(out / "curve.json", curve)
    return out, results, curve


def _curve_point(result: CompareResult) -> dict[str, Any]:
    point: dict[str, Any] = {
        "batch_size": result.baseline.first.manifest["workload"]["description"]["batch_size"],
        "exit_code": result.verdict.exit_code,
    }
    for role, side in (("baseline", result.baseline), ("target", result.target)):
        first = side.first
        lat = (
            (first.metrics.get("inference") or {}).get("latency_s")
            or (first.metrics.get("generation") or {}).get("e2e_s")
            or {}
        )
        point[role] = {"latency_s": lat, "throughput": first.metrics.get("throughput")}
    return point


def diff(bundle_a: Path, bundle_b: Path, *, allow_diff: list[str] | None = None) -> Verdict:
    """Judge two existing bundles (possibly from different machines)."""
    allow = parse_allow(allow_diff)
    return judge(load_side(bundle_a), load_side(bundle_b), allow=allow)


def verdict_json(verdict: Verdict) -> str:
    return json.dumps(verdict.to_dict(), indent=2)
