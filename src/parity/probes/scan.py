"""The scan: what of a workload's step the device cannot run, or runs behind your back.

One pass (``scan``) runs a few steps of the workload under :class:`OpScanMode` with the
CPU as a crutch for unsupported ops, so that every unsupported op is listed at once; then
a plain step without the crutch confirms (or not) that the device fails; then the
compile probes run on the forward calls seen. The result is the bundle's ``ops.json``.

Where it runs (never inside a timed region; the worker's modes call it and write what
it returns as ``ops.json``):

- ``parity scan``: the worker's ``scan`` mode sets the side up and loads the workload as
  for a run, then :func:`scan` replaces the timed steps;
- every run and compare: :func:`scan_after_steps` after the timed steps, after
  ``runner.finish()`` and after metrics and numerics are written, so it touches neither
  (a train step then changes the weights, which no longer matters);
- a side whose steps raised: :func:`failure_scan`, so that a failed bundle still lists
  every unsupported op (the worker's session decides whether time is left for it).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import replace
from typing import Any

from torch import nn

from parity.devices.base import Device
from parity.model.manifest import Environment
from parity.model.ops import (
    BackendReport,
    Fallbacks,
    Finding,
    GraphProbes,
    OpFinding,
    OpPhase,
    OpsCensus,
    OpSource,
    OpsSummary,
    PlainRun,
    ScanError,
    Versions,
)
from parity.probes.graphs import BACKEND, NOTE, CallCapture, graph_probes
from parity.probes.ops import OpScanMode, forward_tracebacks, optimizer_phase
from parity.probes.source import is_user_file, where_line
from parity.safety.redact import redact
from parity.workloads.base import StepRunner

SCAN_STEPS = 2
METHOD = (
    "ops seen by a TorchDispatchMode (after autograd and composite decompositions); "
    "an op that raises for the device runs on the CPU instead and is listed; host "
    "syncs, copies and fallbacks are counted inside the scanned steps only; under "
    "the dispatch mode a torch.compile'd model runs eagerly, so the ops are eager ops"
)
TIMED_STEPS = "the timed steps"


def versions(environment: Environment | None) -> Versions:
    """Python, torch and backend package versions from a manifest's environment."""
    if environment is None:
        return Versions(python=None, torch=None)
    return Versions(
        python=environment.python,
        torch=environment.torch.version,
        backend_packages=dict(environment.device.backend_packages),
    )


def scan_error(exc: BaseException) -> ScanError:
    """An exception as the census records it: type, first line, the user's line."""
    lines = redact(str(exc)).strip().splitlines()
    frames = traceback.extract_tb(exc.__traceback__)
    user = next((f for f in reversed(frames) if is_user_file(f.filename)), None)
    return ScanError(
        type=type(exc).__name__,
        message=(lines[0] if lines else "")[:500],
        where=where_line(user.filename, user.lineno or 0) if user else None,
    )


def _by_op(
    findings: tuple[Finding, ...], *, test_first: bool | None = None
) -> tuple[OpFinding, ...]:
    """Findings grouped by op name: one entry per op with every source line."""
    grouped: dict[str, list[Finding]] = {}
    for f in findings:
        grouped.setdefault(f.op, []).append(f)
    out = []
    for op in sorted(grouped):
        group = grouped[op]
        phases: set[OpPhase] = {f.phase for f in group}
        out.append(
            OpFinding(
                op=op,
                dtypes=tuple(sorted({d for f in group for d in f.dtypes})),
                phases=tuple(sorted(phases)),
                count=sum(f.count for f in group),
                error=group[0].detail,
                sources=tuple(
                    OpSource(
                        where=f.where,
                        code=f.source.code if f.source is not None else None,
                        phase=f.phase,
                        autograd_node=f.autograd_node,
                        count=f.count,
                    )
                    for f in group
                ),
                test_first=test_first,
            )
        )
    return tuple(out)


def _scan_steps(
    runner: StepRunner,
    device: Device,
    mode: OpScanMode,
    capture: CallCapture,
    start: int,
    steps: int,
) -> tuple[int, ScanError | None]:
    """Run the scanned steps under the dispatch mode: how many ran, and what stopped them."""
    done = 0
    with forward_tracebacks(), optimizer_phase(mode), capture:
        for k in range(steps):
            mode.step = k
            try:
                with mode:
                    runner.step(start + k)
                device.synchronize()
            except Exception as exc:  # a failure that is not an unsupported op
                return done, scan_error(exc)
            done += 1
    return done, None


def _plain_run(runner: StepRunner, device: Device, step: int) -> PlainRun:
    """One step without the CPU crutch: does the device really fail?"""
    try:
        runner.step(step)
        device.synchronize()
    except Exception as exc:
        return PlainRun(ran=True, failed=True, error=scan_error(exc))
    return PlainRun(ran=True, failed=False, error=None)


def scan(
    runner: StepRunner,
    model: nn.Module,
    device: Device,
    *,
    start: int = 0,
    steps: int = SCAN_STEPS,
    confirm: bool = True,
    graphs: bool = True,
    environment: Environment | None = None,
) -> OpsCensus:
    """Scan ``steps`` steps from step ``start``: the ``ops.json`` document."""
    t0 = time.perf_counter()
    mode = OpScanMode(device.torch_device, catch=True, catch_all_cpu=device.catch_all_runs_on_cpu)
    tracker = device.op_tracker()
    capture = CallCapture(model)
    tracker.start()
    done, error = _scan_steps(runner, device, mode, capture, start, steps)
    reported = tracker.finish()
    plain = PlainRun(ran=False, failed=None, error=None)
    if confirm and error is None:
        plain = _plain_run(runner, device, start + steps)
    probes = (
        graph_probes(model, capture.calls)
        if graphs
        else GraphProbes(
            backend=BACKEND,
            note=NOTE,
            skipped="compile probes run in a comparison's first repeat only",
        )
    )
    fallbacks = Fallbacks(
        backend=reported,
        device_mismatch=mode.findings("device_mismatch"),
        copies=mode.findings("copy"),
        no_device_kernel=mode.findings("no_device_kernel") or None,
    )
    census = OpsCensus(
        device=str(device.torch_device),
        steps_scanned=done,
        first_step=start,
        custom_ops=_by_op(mode.findings("custom_op"), test_first=True),
        unsupported=_by_op(mode.findings("unsupported")),
        fallbacks=fallbacks,
        host_syncs=mode.findings("host_sync"),
        plain_run=plain,
        graphs=probes,
        inventory=mode.inventory(done),
        versions=versions(environment),
        scan_error=error,
        dropped_findings=mode.dropped_events,
        scan_s=time.perf_counter() - t0,
        method=METHOD,
    )
    return _summarised(census, mode, done)


def _summarised(census: OpsCensus, mode: OpScanMode, done: int) -> OpsCensus:
    """The census with its summary and its ``clean`` judgement."""
    graphs = census.graphs or GraphProbes()
    fallbacks = census.fallbacks or Fallbacks(backend=BackendReport())
    n_fallbacks = len(fallbacks.ops()) + len(fallbacks.device_mismatch)
    summary = OpsSummary(
        ops=len({row.op for row in census.inventory}),
        op_calls_per_step=tuple(
            sum(e.counts.get(k, 0) for e in mode.entries.values()) for k in range(done)
        ),
        custom_ops=len(census.custom_ops),
        unsupported=len(census.unsupported),
        fallbacks=n_fallbacks,
        host_syncs=sum(f.count for f in census.host_syncs),
        copies=sum(f.count for f in fallbacks.copies),
        graph_breaks=graphs.explain.graph_breaks if graphs.explain else None,
        fullgraph=graphs.fullgraph.passed if graphs.fullgraph else None,
        recompilations=graphs.recompilations.recompilations if graphs.recompilations else None,
    )
    clean = not census.unsupported and not n_fallbacks and census.scan_error is None
    return replace(census, summary=summary, clean=clean)


def safe_scan(**kwargs: Any) -> OpsCensus:
    """:func:`scan` that reports its own failure instead of raising."""
    try:
        return scan(**kwargs)
    except Exception as exc:
        return OpsCensus(scan_error=scan_error(exc), clean=False)


def scan_after_steps(
    runner: StepRunner,
    model: nn.Module,
    device: Device,
    *,
    start: int,
    graphs: bool = True,
    environment: Environment | None = None,
) -> OpsCensus:
    """After a run's timed steps and ``finish``: the census of a few more (never raises).

    ``graphs=False`` skips the compile probes (about a second): a comparison runs them
    in its first repeat only, as they do not change from one process to the next.
    """
    census = safe_scan(
        runner=runner,
        model=model,
        device=device,
        start=start,
        confirm=False,
        graphs=graphs,
        environment=environment,
    )
    plain = PlainRun(ran=True, failed=False, error=None, note=TIMED_STEPS)
    return replace(census, plain_run=plain)


def failure_scan(
    exc: BaseException,
    runner: StepRunner,
    model: nn.Module,
    device: Device,
    *,
    environment: Environment | None = None,
) -> OpsCensus | None:
    """After the timed steps raised ``exc``: the census from step 0 (never raises).

    None where a scan would not help: for an interrupt or exit (not an ``Exception``), and
    after running out of memory (rerunning the steps would only repeat it).
    """
    if not isinstance(exc, Exception) or "out of memory" in str(exc).lower():
        return None
    census = safe_scan(
        runner=runner, model=model, device=device, start=0, confirm=False, environment=environment
    )
    plain = PlainRun(ran=True, failed=True, error=scan_error(exc), note=TIMED_STEPS)
    return replace(census, plain_run=plain, after_failure=True)
