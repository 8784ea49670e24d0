"""The Python API the CLI calls: ``run``, ``compare``, ``diff``.

Every input is validated before anything is written, so bad input leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from parity.bundle import Bundle, SideRuns, load_bundle, load_side, write_json
from parity.errors import UsageError
from parity.judge.cost import CostInputs, Price, parse_price
from parity.judge.verdict import Verdict, judge
from parity.report.run import report_after_compare, write_reports
from parity.runner.job import Job
from parity.runner.launch import run_job
from parity.runner.measure import Plan, measure
from parity.spec import SideSpec, WorkloadSpec, parse_side
from parity.store import index_quietly
from parity.workloads import resolve
from parity.workloads.base import Workload
from parity.workloads.frozen import FINGERPRINT_PARTS, Frozen, cache_root, freeze

DEFAULT_TIMEOUT_S = 900.0
REFERENCE_DIR = "reference"
INPUTS_FILE = "inputs.json"
REQUEST_FILE = "request.json"


@dataclass(kw_only=True)
class JudgeInputs:
    """What a verdict depends on besides the bundles; saved beside them as inputs.json."""

    allow_diff: list[str] = field(default_factory=list)
    target_loss: float | None = None
    cost: CostInputs = field(default_factory=CostInputs)
    operational: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow_diff": self.allow_diff,
            "target_loss": self.target_loss,
            "cost": self.cost.to_dict(),
            "operational": self.operational,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeInputs:
        c = dict(data.get("cost") or {})
        prices = {k: Price(**v) for k, v in (c.pop("prices", None) or {}).items()}
        return cls(
            allow_diff=list(data.get("allow_diff") or []),
            target_loss=data.get("target_loss"),
            cost=CostInputs(prices=prices, **c),
            operational=dict(data.get("operational") or {}),
        )

    @classmethod
    def find(cls, *sides: Path) -> JudgeInputs:
        for side in sides:
            path = side.parent / INPUTS_FILE
            if path.is_file():
                try:
                    return cls.from_dict(json.loads(path.read_text()))
                except (ValueError, TypeError, KeyError) as exc:
                    raise UsageError(
                        f"{path} is not a valid inputs file ({exc}): remove it "
                        "or pass the options explicitly"
                    ) from None
        return cls()


ProgressFn = Callable[[str, dict[str, Any]], None]


@dataclass
class CompareResult:
    out: Path
    baseline: SideRuns
    target: SideRuns
    verdict: Verdict
    report: Path | None = None  # OUT/report.html, where it could be written

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


def _job(
    role: str,
    side: SideSpec,
    wspec: WorkloadSpec,
    frozen: Frozen,
    repeat: int = 0,
    torchrun: dict[str, Any] | None = None,
) -> Job:
    return Job(
        settings={k: v for k, v in (torchrun or {}).items() if v},
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
    torchrun: dict[str, Any] | None = None,
) -> Bundle:
    """Run one side once and return its bundle (status ok or failed)."""
    spec = parse_side(side)
    workload, wspec = _prepare(wspec)
    _fresh_dir(out)
    frozen = freeze(workload)
    if out.is_dir():
        out.rmdir()
    job = _job("run", spec, wspec, frozen, torchrun=torchrun)
    job.settings["capture"] = True  # the numerics probe, for a later diff with a reference
    run_job(
        job,
        out,
        timeout_s=timeout_s,
        on_event=(lambda e: progress("run", e)) if progress else None,
    )
    bundle = load_bundle(out)
    index_quietly(out)
    return bundle


def compare(
    wspec: WorkloadSpec,
    baseline: str,
    target: str,
    *,
    out: Path | None = None,
    allow_diff: list[str] | None = None,
    plan: Plan | None = None,
    progress: ProgressFn | None = None,
    target_loss: float | None = None,
    cost: CostInputs | None = None,
    operational: dict[str, str] | None = None,
    checks: list[Path] | None = None,
) -> CompareResult:
    """Run both sides in fresh, interleaved processes and judge them.

    ``plan`` says how much to measure (fixed repeats, or until a precision or a time
    budget) and whether to run the target's compliance checks.
    """
    plan = plan or Plan()
    side_a, side_b = parse_side(baseline), parse_side(target)
    parse_allow(allow_diff)  # validated before anything is written
    from parity.checks.common import read_checks, store_checks

    read_checks(checks or [])  # check results (parity check --out): validated before writing
    workload, wspec = _prepare(wspec)
    if out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = Path("parity-runs") / f"{stamp}-{workload.name.replace(':', '_').replace('/', '_')}"
    resuming = (out / REQUEST_FILE).is_file()
    if not resuming:
        _fresh_dir(out)
    frozen = freeze(workload)
    if resuming:
        clear_partial(out)
    else:
        out.mkdir(parents=True, exist_ok=True)
        write_json(
            out / REQUEST_FILE,
            {
                "workload": wspec.to_dict(),
                "baseline": baseline,
                "target": target,
                "plan": plan.to_dict(),
                "inputs": JudgeInputs(
                    allow_diff=list(allow_diff or []),
                    target_loss=target_loss,
                    cost=cost or CostInputs(),
                    operational=operational or {},
                ).to_dict(),
            },
        )
    if checks:
        store_checks(out, checks)  # OUT/checks/<name>/check.json, read by compare and diff
    sides = {"baseline": side_a, "target": side_b}
    compliance: dict[str, Job] = {}
    if plan.compliance:
        reseeded_spec = replace(wspec, seed=wspec.seed + 1)
        reseeded = freeze(resolve(reseeded_spec))
        compliance["reseeded"] = _job("target", side_b, reseeded_spec, reseeded)
        same = _job("target", side_b, wspec, frozen)
        same.settings["same_input"] = True
        compliance["same-input"] = same
        for job in compliance.values():  # timing only: no FLOP count, no compile probes
            job.settings["compliance"] = True
    reference = fp64_reference(frozen, wspec, out / REFERENCE_DIR, plan.timeout_s, progress)

    def make_job(role: str, k: int) -> Job:
        job = _job(role, sides[role], wspec, frozen, repeat=k, torchrun=plan.torchrun)
        job.settings["capture"] = k == 0  # the numerics probe runs in the first repeat
        return job

    measure(
        make_job,
        out,
        plan,
        lambda label: partial(progress, label) if progress else None,
        compliance,
    )
    inputs = JudgeInputs(
        allow_diff=list(allow_diff or []),
        target_loss=target_loss,
        cost=cost or CostInputs(),
        operational=operational or {},
    )
    return conclude(out, inputs, reference=reference)


def conclude(out: Path, inputs: JudgeInputs, *, reference: Bundle | None) -> CompareResult:
    """Judge the sides measured in ``out``; write inputs.json, verdict.json, the report,
    and index them (the last two after the results are on disk: failures only warn)."""
    from parity.checks.common import checked_for

    a, b = load_side(out / "baseline"), load_side(out / "target")
    write_json(out / INPUTS_FILE, inputs.to_dict())
    verdict = judge(
        a,
        b,
        allow=parse_allow(inputs.allow_diff),
        reference=reference,
        target_loss=inputs.target_loss,
        cost_inputs=inputs.cost,
        operational_answers=inputs.operational,
        checked=checked_for(a.first, b.first, roots=[out]),
    )
    write_json(out / "verdict.json", verdict.to_dict())
    result = CompareResult(out=out, baseline=a, target=b, verdict=verdict)
    result.report = report_after_compare(out)
    index_quietly(out)
    return result


def resume(out: Path, *, progress: ProgressFn | None = None) -> CompareResult:
    """Finish a comparison that was interrupted: complete bundles are kept and reused,
    partial ones (hidden temporary directories) are removed, missing runs are made."""
    path = out / REQUEST_FILE
    if not path.is_file():
        raise UsageError(
            f"{out} holds no {REQUEST_FILE}: --resume takes the output directory "
            "of an interrupted parity compare"
        )
    try:
        req = json.loads(path.read_text())
        inputs = JudgeInputs.from_dict(req["inputs"])
        plan = Plan(**req["plan"])
        wspec = WorkloadSpec.from_dict(req["workload"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a valid request ({exc}): rerun the comparison") from None
    return compare(
        wspec,
        req["baseline"],
        req["target"],
        out=out,
        plan=plan,
        allow_diff=inputs.allow_diff,
        target_loss=inputs.target_loss,
        cost=inputs.cost,
        operational=inputs.operational,
        progress=progress,
    )


def clear_partial(out: Path) -> list[Path]:
    """Remove the hidden temporary directories a killed run left (never a bundle)."""
    removed = []
    for tmp in sorted(out.glob("**/.*.tmp-*")):
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    for stale in ("verdict.json", INPUTS_FILE):
        (out / stale).unlink(missing_ok=True)
    return removed


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


def fp64_reference(
    frozen: Frozen,
    wspec: WorkloadSpec,
    dest: Path,
    timeout_s: float,
    progress: ProgressFn | None = None,
) -> Bundle:
    """The fp64 CPU reference bundle of a frozen workload: made once per fingerprint in
    the cache, then copied next to the sides (``OUT/reference``) so that the comparison's
    directory carries everything a later ``parity diff`` needs."""
    if (dest / "manifest.json").is_file():  # resuming: the copy is already there
        return load_bundle(dest)
    cached = cache_root() / "reference" / frozen.fingerprint
    if not (cached / "manifest.json").is_file():
        job = _job("reference", parse_side("cpu"), wspec, frozen)
        job.settings["mode"] = "reference"
        tmp_final = cached.parent / f".{cached.name}.{uuid.uuid4().hex[:8]}"
        run_job(
            job,
            tmp_final,
            timeout_s=timeout_s,
            on_event=partial(progress, "fp64 reference") if progress else None,
        )
        if load_bundle(tmp_final).ok:
            try:
                os.replace(tmp_final, cached)
            except OSError:  # made by another process meanwhile
                shutil.rmtree(tmp_final, ignore_errors=True)
        else:
            shutil.copytree(tmp_final, dest)
            shutil.rmtree(tmp_final, ignore_errors=True)
            return load_bundle(dest)
    shutil.copytree(cached, dest)
    return load_bundle(dest)


def find_reference(*sides: Path, explicit: Path | None = None) -> Bundle | None:
    """The fp64 reference for a diff: ``--reference``, else ``reference/`` beside a side."""
    if explicit is not None:
        return load_bundle(explicit)
    for side in sides:
        candidate = side.parent / REFERENCE_DIR
        if (candidate / "manifest.json").is_file():
            return load_bundle(candidate)
    return None


def diff(
    bundle_a: Path,
    bundle_b: Path,
    *,
    allow_diff: list[str] | None = None,
    reference: Path | None = None,
    target_loss: float | None = None,
    prices: list[str] | None = None,
    checks: list[Path] | None = None,
) -> Verdict:
    """Judge two existing bundles (possibly from different machines).

    Sides from one ``parity compare`` directory are judged with the inputs that compare
    was given (``inputs.json`` beside them: allowed differences, target loss, cost inputs,
    operational answers), so the verdict is the same; options given here override them.
    """
    stored = JudgeInputs.find(bundle_a, bundle_b)
    if allow_diff is None:
        allow_diff = stored.allow_diff
    if target_loss is None:
        target_loss = stored.target_loss
    cost = stored.cost
    if prices:
        cost = replace(cost, prices={**cost.prices, **dict(parse_price(p) for p in prices)})
    allow = parse_allow(allow_diff)
    a, b = load_side(bundle_a), load_side(bundle_b)
    ref = find_reference(bundle_a, bundle_b, explicit=reference)
    if ref is not None and ref.fingerprint != a.first.fingerprint:
        ref = None if reference is None else _mismatch(reference)
    return judge(
        a,
        b,
        allow=allow,
        reference=ref,
        target_loss=target_loss,
        cost_inputs=cost,
        operational_answers=stored.operational,
        checked=_checked(a.first, b.first, bundle_a, bundle_b, checks),
    )


def _checked(
    a: Bundle, b: Bundle, path_a: Path, path_b: Path, checks: list[Path] | None
) -> dict[str, str]:
    """Unproven items that passing checks prove: ``checks/`` beside the sides, and --checks."""
    from parity.checks.common import checked_for

    return checked_for(a, b, roots=[path_a.parent, path_b.parent], extra=checks)


def _mismatch(path: Path) -> Bundle:
    raise UsageError(
        f"--reference {path} is the fp64 reference of another workload: pass the "
        "reference/ directory of the same comparison"
    )


def verdict_json(verdict: Verdict) -> str:
    return json.dumps(verdict.to_dict(), indent=2)


def report(
    run_dir: Path,
    *,
    html: Path | None = None,
    md: Path | None = None,
    json_path: Path | None = None,
) -> dict[str, Path | str]:
    """Reports of a comparison directory (HTML, Markdown, JSON); ``-`` returns the text."""
    return write_reports(run_dir, html=html, md=md, json_path=json_path)


def scan(
    wspec: WorkloadSpec,
    side: str,
    out: Path | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: ProgressFn | None = None,
) -> Bundle:
    """Scan a workload on one side in a fresh process: every unsupported op in one pass,
    fallbacks, host syncs, graph breaks; the bundle (status ok or failed) holds ops.json."""
    spec = parse_side(side)
    workload, wspec = _prepare(wspec)
    if out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = workload.name.replace(":", "_").replace("/", "_")
        out = Path("parity-runs") / f"{stamp}-{name}-scan"
    _fresh_dir(out)
    frozen = freeze(workload)
    if out.is_dir():
        out.rmdir()
    job = _job("scan", spec, wspec, frozen)
    job.settings["mode"] = "scan"
    run_job(job, out, timeout_s=timeout_s, on_event=partial(progress, "scan") if progress else None)
    return load_bundle(out)
