"""The scan: what of a workload's step the device cannot run, or runs behind your back.

One pass (``scan``) runs a few steps of the workload under :class:`OpScanMode` with the
CPU as a crutch for unsupported ops, so that every unsupported op is listed at once; then
a plain step without the crutch confirms (or not) that the device fails; then the
compile probes run on the forward calls seen. The result is the bundle's ``ops.json``.

Where it runs (never inside a timed region):

- ``parity scan``: a job with ``settings["mode"] == "scan"``; the worker sets the side up
  and loads the workload as for a run, then :func:`scan_only` replaces the timed steps;
- every run and compare: :func:`scan_after_steps` after the timed steps, after
  ``runner.finish()`` and after metrics and numerics are written, so it touches neither
  (a train step then changes the weights, which no longer matters);
- a side whose steps raised: :func:`failure_scan` (armed with :func:`arm_failure_scan`)
  so that a failed bundle still lists every unsupported op, if time is left.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch import nn

from parity.bundle import MANIFEST, write_json
from parity.devices.base import Device
from parity.probes.backend_ops import BackendProbe
from parity.probes.graphs import CallCapture, graph_probes
from parity.probes.ops import OpScanMode, forward_tracebacks, optimizer_phase
from parity.probes.source import is_user_file, where
from parity.workloads.base import StepRunner

OPS_FILE = "ops.json"
OPS_SCHEMA = 1
SCAN_STEPS = 2
Emit = Callable[..., None]


def versions(environment: dict[str, Any] | None) -> dict[str, Any]:
    """Python, torch and backend package versions from a manifest's environment."""
    env = environment or {}
    return {
        "python": env.get("python"),
        "torch": (env.get("torch") or {}).get("version"),
        "backend_packages": (env.get("device") or {}).get("backend_packages") or {},
    }


def _error(exc: BaseException) -> dict[str, Any]:
    lines = str(exc).strip().splitlines()
    frames = traceback.extract_tb(exc.__traceback__)
    user = next((f for f in reversed(frames) if is_user_file(f.filename)), None)
    return {
        "type": type(exc).__name__,
        "message": (lines[0] if lines else "")[:500],
        "where": where({"file": user.filename, "line": user.lineno}) if user else None,
    }


def _by_op(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings grouped by op name: one entry per op with every source line."""
    ops: dict[str, dict[str, Any]] = {}
    for f in findings:
        entry = ops.setdefault(
            f["op"],
            {"op": f["op"], "dtypes": [], "phases": [], "count": 0, "error": f["detail"]},
        )
        entry["count"] += f["count"]
        for key, values in (("dtypes", f["dtypes"]), ("phases", [f["phase"]])):
            entry[key] = sorted(set(entry[key]) | set(values))
        entry.setdefault("sources", []).append(
            {
                "where": f["where"],
                "code": (f["source"] or {}).get("code"),
                "phase": f["phase"],
                "autograd_node": f["autograd_node"],
                "count": f["count"],
            }
        )
    return sorted(ops.values(), key=lambda e: str(e["op"]))


def scan(
    runner: StepRunner,
    model: nn.Module,
    device: Device,
    *,
    start: int = 0,
    steps: int = SCAN_STEPS,
    confirm: bool = True,
    graphs: bool = True,
    environment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Scan ``steps`` steps from step ``start``; the ``ops.json`` document."""
    t0 = time.perf_counter()
    mode = OpScanMode(device.torch_device, catch=True)
    backend = BackendProbe(device.type)
    capture = CallCapture(model)
    scan_error: dict[str, Any] | None = None
    done = 0
    backend.start()
    with forward_tracebacks(), optimizer_phase(mode), capture:
        for k in range(steps):
            mode.step = k
            try:
                with mode:
                    runner.step(start + k)
                device.synchronize()
            except Exception as exc:  # a failure that is not an unsupported op
                scan_error = _error(exc)
                break
            done += 1
    reported = backend.finish()
    plain: dict[str, Any] = {"ran": False, "failed": None, "error": None}
    if confirm and scan_error is None:
        plain["ran"] = True
        try:
            runner.step(start + steps)
            device.synchronize()
            plain["failed"] = False
        except Exception as exc:
            plain.update(failed=True, error=_error(exc))
    probes: dict[str, Any] = (
        graph_probes(model, capture.calls)
        if graphs
        else {"skipped": "compile probes run in a comparison's first repeat only"}
    )
    unsupported = _by_op(mode.findings("unsupported"))
    custom = _by_op(mode.findings("custom_op"))
    for entry in custom:
        entry["test_first"] = True
    mismatch = mode.findings("device_mismatch")
    fallbacks: dict[str, Any] = {
        "backend": reported,
        "device_mismatch": mismatch,
        "copies": mode.findings("copy"),
    }
    syncs = mode.findings("host_sync")
    explain: dict[str, Any] = probes.get("explain") or {}
    summary = {
        "ops": len({r["op"] for r in mode.inventory(done)}),
        "op_calls_per_step": [
            sum(e.counts.get(k, 0) for e in mode.entries.values()) for k in range(done)
        ],
        "custom_ops": len(custom),
        "unsupported": len(unsupported),
        "fallbacks": len(reported.get("fallback_ops") or []) + len(mismatch),
        "host_syncs": sum(s["count"] for s in syncs),
        "copies": sum(c["count"] for c in fallbacks["copies"]),
        "graph_breaks": explain.get("graph_breaks"),
        "fullgraph": (probes.get("fullgraph") or {}).get("passed"),
        "recompilations": (probes.get("recompilations") or {}).get("recompilations"),
    }
    return {
        "schema_version": OPS_SCHEMA,
        "device": str(device.torch_device),
        "steps_scanned": done,
        "first_step": start,
        "custom_ops": custom,
        "unsupported": unsupported,
        "fallbacks": fallbacks,
        "host_syncs": syncs,
        "plain_run": plain,
        "graphs": probes,
        "inventory": mode.inventory(done),
        "versions": versions(environment),
        "summary": summary,
        "clean": not unsupported and not summary["fallbacks"] and scan_error is None,
        "scan_error": scan_error,
        "dropped_findings": mode.dropped_events,
        "scan_s": time.perf_counter() - t0,
        "method": (
            "ops seen by a TorchDispatchMode (after autograd and composite decompositions); "
            "an op that raises for the device runs on the CPU instead and is listed; host "
            "syncs, copies and fallbacks are counted inside the scanned steps only; under "
            "the dispatch mode a torch.compile'd model runs eagerly, so the ops are eager ops"
        ),
    }


def _safe_scan(**kwargs: Any) -> dict[str, Any]:
    """``scan`` that reports its own failure instead of raising."""
    try:
        return scan(**kwargs)
    except Exception as exc:
        return {"schema_version": OPS_SCHEMA, "scan_error": _error(exc), "clean": False}


def scan_after_steps(
    out: Path,
    runner: StepRunner,
    model: nn.Module,
    device: Device,
    manifest: dict[str, Any],
    *,
    start: int,
    graphs: bool = True,
) -> None:
    """After a run's timed steps and ``finish``: write ``ops.json`` (never raises).

    ``graphs=False`` skips the compile probes (about a second): a comparison runs them
    in its first repeat only, as they do not change from one process to the next.
    """
    disarm_failure_scan()
    ops = _safe_scan(
        runner=runner,
        model=model,
        device=device,
        start=start,
        confirm=False,
        graphs=graphs,
        environment=manifest.get("environment"),
    )
    ops["plain_run"] = {"ran": True, "failed": False, "error": None, "note": "the timed steps"}
    write_json(out / OPS_FILE, ops)


def scan_only(
    out: Path,
    manifest: dict[str, Any],
    runner: StepRunner,
    model: nn.Module,
    device: Device,
    set_phase: Callable[[str], None],
    emit: Emit,
) -> None:
    """A scan job (``parity scan``): the scan instead of the timed steps."""
    disarm_failure_scan()
    set_phase("scan")
    emit("phase", phase="scan")
    ops = scan(
        runner=runner,
        model=model,
        device=device,
        environment=manifest.get("environment"),
    )
    write_json(out / OPS_FILE, ops)
    if ops["scan_error"] is not None:
        err = ops["scan_error"]
        raise RuntimeError(
            f"the scan stopped at {err['where'] or 'an unknown line'}: {err['type']}: "
            f"{err['message']} (not an unsupported op: the workload fails here on any device?)"
        )
    write_json(out / "metrics.json", {"mode": "scan", "note": "a scan bundle: nothing was timed"})
    write_json(out / "numerics.json", {"losses": [], "outputs": {}, "extra": {"mode": "scan"}})
    manifest.update(status="ok", reason=None, finished_unix=time.time())
    emit("phase", phase="done")
    write_json(out / MANIFEST, manifest)


# ------------------------------------------------------------ after a failure

_armed: dict[str, Any] = {}


def arm_failure_scan(
    out: Path,
    runner: StepRunner,
    model: nn.Module,
    device: Device,
    manifest: dict[str, Any],
    *,
    timeout_s: float | None,
) -> None:
    """Remember what a scan needs, should the timed steps raise."""
    _armed.clear()
    _armed.update(
        out=out,
        runner=runner,
        model=model,
        device=device,
        environment=manifest.get("environment"),
        deadline=time.monotonic() + timeout_s / 3 if timeout_s else None,
    )


def disarm_failure_scan() -> None:
    _armed.clear()


def failure_scan(exc: BaseException) -> bool:
    """After the steps raised: scan from step 0 and write ``ops.json``; False if not armed.

    Skipped when a third of the side's timeout is spent, so that the scan cannot turn
    a failure with a reason into a timeout.
    """
    if not _armed or not isinstance(exc, Exception) or "out of memory" in str(exc).lower():
        return False  # rerunning steps after running out of memory would only repeat it
    armed = dict(_armed)
    _armed.clear()
    if armed["deadline"] is not None and time.monotonic() > armed["deadline"]:
        return False
    ops = _safe_scan(
        runner=armed["runner"],
        model=armed["model"],
        device=armed["device"],
        start=0,
        confirm=False,
        environment=armed["environment"],
    )
    ops["plain_run"] = {
        "ran": True,
        "failed": True,
        "error": _error(exc),
        "note": "the timed steps",
    }
    ops["after_failure"] = True
    write_json(Path(armed["out"]) / OPS_FILE, ops)
    return True
