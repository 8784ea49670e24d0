"""A finished comparison as one MLflow run, beside the team's other experiments.

Made from the comparison in memory (its verdict, the sides' manifests and measuring
plan) once everything is written: the directory stays the truth, MLflow gets a copy.
Parameters say what was compared, metrics give the figures, tags the decision; the
artifacts are ``verdict.json``, ``report.html`` and the view's Markdown summary. ``mlflow``
is an optional extra imported only when logging, and a failure to log must never lose
results: ``log_comparison_quietly`` warns and returns None.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from parity.bundle import VERDICT
from parity.comparison import Comparison
from parity.errors import UsageError
from parity.model.quality import (
    AgreementCheck,
    LocalisationCheck,
    LossCheck,
    NonFiniteCheck,
    OutputCheck,
    QualityCheck,
    TokensCheck,
    TrajectoryCheck,
)
from parity.model.verdict import Verdict
from parity.report import fair
from parity.report.markdown import render_markdown
from parity.safety.urls import refusal, safe_form

log = logging.getLogger(__name__)

INSTALL = "pip install 'parity[mlflow]'"
SUMMARY = "summary.md"
#: MLflow's limits: key length, value lengths, params per ``log_batch`` call
MAX_KEY, MAX_PARAM, MAX_TAG, BATCH = 250, 6000, 8000, 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What one comparison logs, with names MLflow accepts."""

    name: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]


def mlflow_key(name: str) -> str:
    """``name`` as an MLflow key: letters, digits and ``_ . -`` (any other run of characters
    becomes ``_``), no leading dot (MLflow reads keys as paths), at most 250 characters."""
    key = _UNSAFE.sub("_", name.strip()).lstrip(".")
    return key[:MAX_KEY] or "_"


def run_record(comparison: Comparison) -> RunRecord:
    """The parameters, metrics and tags of a judged comparison."""
    verdict, out = _verdict(comparison), comparison.out
    w, sides = verdict.workload, verdict.sides
    tags = {
        "parity.verdict": "PASS" if verdict.passed else "FAIL",
        "parity.exit_code": str(verdict.exit_code),
        "parity.out": str(out.resolve()),
    }
    failing = [g.name for g in verdict.gates if not g.passed]
    if failing:
        tags["parity.failing_gates"] = ", ".join(failing)
    if verdict.speed is not None:
        tags["parity.speed"] = verdict.speed.verdict
        tags["parity.speed_reliable"] = str(verdict.speed.reliable).lower()
    if verdict.cost is not None and verdict.cost.verdict is not None:
        tags["parity.cost"] = verdict.cost.verdict
    tags |= fair.mlflow_figures(verdict)[0]
    return RunRecord(
        name=f"{w.name or 'script'}: {sides.baseline.side} vs {sides.target.side}",
        params={mlflow_key(k): v[:MAX_PARAM] for k, v in _params(comparison, verdict).items()},
        metrics={mlflow_key(k): v for k, v in _metrics(verdict).items()},
        tags={k: v[:MAX_TAG] for k, v in tags.items()},
    )


def _verdict(comparison: Comparison) -> Verdict:
    if comparison.verdict is None:
        raise UsageError(f"{comparison.out} is not judged yet: log a finished comparison")
    return comparison.verdict


def _params(comparison: Comparison, verdict: Verdict) -> dict[str, str]:
    w = verdict.workload
    given: dict[str, object] = {"workload.fingerprint": w.fingerprint}
    for key in ("name", "size", "kind"):
        given[f"workload.{key}"] = getattr(w, key)
    for key in ("batch_size", "seq_len", "steps", "seed"):
        given[f"workload.{key}"] = getattr(w.description, key)
    for role, side in verdict.sides.items():
        given[f"{role}.spec"] = str(side.side)
        given[f"{role}.device_name"] = side.device_name
        given[f"{role}.repeats"] = side.repeats
        if side.generation is not None:
            given[f"{role}.generate_loop"] = side.generation.loop
        runs = comparison.sides.of(role)
        if runs is not None:
            given[f"{role}.parity_version"] = runs.first.manifest.parity_version
    for row in verdict.compatibility.versions:  # python, torch, the backend's packages
        given[f"baseline.version.{row.name}"] = row.baseline
        given[f"target.version.{row.name}"] = row.target
    info = next((s.info for s in (comparison.target, comparison.baseline) if s and s.info), None)
    plan = info.plan if info is not None else None
    if plan is not None:
        for f in fields(plan):
            if f.name != "torchrun":
                given[f"measure.{f.name}"] = getattr(plan, f.name)
    if verdict.speed is not None and verdict.speed.stop is not None:
        given["measure.stopped_by"] = verdict.speed.stop.reason
    return {k: str(v) for k, v in given.items() if v is not None}


def _metrics(verdict: Verdict) -> dict[str, float]:
    """Every figure the verdict has (verdict.json holds finite numbers only)."""
    given: dict[str, float | None] = {}
    if (speed := verdict.speed) is not None:
        given |= {"speed.ratio": speed.ratio, "speed.speedup": speed.speedup}
        for key in ("low", "high", "half_width_rel"):
            given[f"speed.interval_{key}"] = getattr(speed.interval, key)
    for role, side in verdict.sides.items():
        given[f"{role}.median_step_s"] = side.median_step_s
        for key in ("samples_per_s", "tokens_per_s", "steps_per_s"):
            given[f"{role}.{key}"] = getattr(side.throughput, key, None)
        given[f"{role}.mfu"] = side.flops.mfu if side.flops is not None else None
        if side.input_pipeline is not None:
            given[f"{role}.input_share"] = side.input_pipeline.input_share
            given[f"{role}.input_bound"] = float(side.input_pipeline.input_bound)
    checks = [("quality", c) for c in (verdict.quality.checks if verdict.quality else ())]
    checks += [("numerics", c) for c in (verdict.numerics.gates if verdict.numerics else ())]
    for section, check in checks:
        if not check.gated:
            continue
        name, value = _figure(check)
        given[f"{section}.{check.name}.{name}"] = value
        if check.passed is not None:
            given[f"{section}.{check.name}.passed"] = float(check.passed)
    if verdict.cost is not None:
        given["cost.ratio"] = verdict.cost.cost_ratio
    given |= fair.mlflow_figures(verdict)[1]
    return {k: float(v) for k, v in given.items() if v is not None}


def _figure(check: QualityCheck) -> tuple[str, float | None]:
    """The figure a quality check is judged on."""
    if isinstance(check, LossCheck):
        return "final_rel", check.final_rel
    if isinstance(check, OutputCheck):
        return "rel_rmse", check.rel_rmse
    if isinstance(check, TokensCheck):
        return "agreement", check.agreement
    if isinstance(check, AgreementCheck):
        return check.metric, check.value
    if isinstance(check, TrajectoryCheck):
        return "worst_ratio", check.worst_ratio
    if isinstance(check, NonFiniteCheck):
        return "step", None if check.step is None else float(check.step)
    if isinstance(check, LocalisationCheck):
        return "excess", check.excess
    if check.kind == "cosine":  # a ReferenceCheck
        return "cosine", check.cosine
    return "rmse_target", check.rmse_target


def log_comparison(
    comparison: Comparison | Path,
    *,
    tracking_uri: str | None = None,
    experiment: str = "parity",
) -> str:
    """Log a judged comparison (or the directory of one) as one MLflow run and return
    the run's id.

    ``tracking_uri`` None: MLflow's own default (``MLFLOW_TRACKING_URI``, ...). Raises
    ``UsageError`` without the extra, without a verdict or where nothing listens at an
    http(s) URI, and MLflow's own errors when the server refuses the run.
    """
    if not isinstance(comparison, Comparison):
        comparison = _load(Path(comparison))
    out, verdict = comparison.out, _verdict(comparison)
    record = run_record(comparison)
    client = _client(tracking_uri)
    where = str(client.tracking_uri)  # MLflow's default: MLFLOW_TRACKING_URI, ...
    if refusal(where):
        raise UsageError(
            f"the MLflow tracking URI {safe_form(where)} carries {refusal(where)}, which MLflow "
            "would print and store: give it without and set MLFLOW_TRACKING_TOKEN (or "
            "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD) instead"
        )
    _check_reachable(where)
    from mlflow.entities import Metric, Param

    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    run_id: str = client.create_run(
        experiment_id, run_name=record.name, tags=record.tags
    ).info.run_id
    status = "FAILED"
    try:
        stamp = int(time.time() * 1000)
        params = [Param(k, v) for k, v in record.params.items()]
        metrics = [Metric(k, v, stamp, 0) for k, v in record.metrics.items()]
        for i in range(0, max(len(params), len(metrics)), BATCH):
            client.log_batch(run_id, metrics=metrics[i : i + BATCH], params=params[i : i + BATCH])
        for path in (out / VERDICT, comparison.report):
            if path is not None and path.is_file():
                client.log_artifact(run_id, str(path))
        summary = render_markdown(verdict, sides=comparison.sides)
        with tempfile.TemporaryDirectory(prefix="parity-mlflow-") as tmp:
            (Path(tmp) / SUMMARY).write_text(summary)
            client.log_artifact(run_id, str(Path(tmp) / SUMMARY))
        status = "FINISHED"
    finally:
        with contextlib.redirect_stdout(sys.stderr):  # MLflow prints the run's URL
            client.set_terminated(run_id, status)
    return run_id


def _load(out: Path) -> Comparison:
    """A finished comparison's directory, with its report where there is one."""
    from parity.bundle import REPORT_HTML, is_comparison

    if not is_comparison(out):
        raise UsageError(f"{out} holds no {VERDICT}: give the directory of a finished comparison")
    found = Comparison.load(out)
    report = out / REPORT_HTML
    return replace(found, report=report if report.is_file() else None)


def _client(tracking_uri: str | None) -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise UsageError(f"logging to MLflow needs the mlflow extra ({exc}): {INSTALL}") from None
    return MlflowClient(tracking_uri)


def _check_reachable(uri: str) -> None:
    """Fail at once where no server listens (MLflow's own retries take minutes)."""
    url = urlsplit(uri)
    if url.scheme not in ("http", "https") or not url.hostname:
        return
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
        with socket.create_connection((url.hostname, port), timeout=10):
            pass
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"no MLflow tracking server answers at {safe_form(uri)} ({exc}): start it or fix "
            "the URI"
        ) from None


def log_comparison_quietly(
    comparison: Comparison | Path,
    *,
    tracking_uri: str | None = None,
    experiment: str = "parity",
) -> str | None:
    """``log_comparison`` for after a comparison: any failure is a warning on stderr
    (through ``logging``) and None, never an exception; the results stay in ``out``."""
    try:
        return log_comparison(comparison, tracking_uri=tracking_uri, experiment=experiment)
    except Exception as exc:
        log.warning(
            "parity: the comparison was not logged to MLflow (%s: %s); its results are in %s",
            type(exc).__name__,
            " ".join(str(exc).split())[:300],
            comparison.out if isinstance(comparison, Comparison) else comparison,
        )
        return None
