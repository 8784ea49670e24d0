"""``parity check soak``: sustained inference or generation, drift and leaks.

One part in ``soak`` mode runs the workload for ``--duration``, summarising windows of
steps (median latency, the host RSS floor over the window and device allocated bytes at
its end). The gates are slopes with 95% intervals that allow for autocorrelation
(``stats.slope_ci``): latency drift (relative per hour) and memory growth (MiB per
minute at the soak's throughput); each fails when its interval lies wholly above its
bound. The first ``--warmup`` fraction of the run is left out. A short soak whose
interval still reaches above a bound is INCONCLUSIVE (``conclusive: false``,
exit code 3), never a pass.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from parity.bundle import Bundle
from parity.checks.common import finish, parts_ran, start
from parity.judge.drift import slope_gate, window_for
from parity.measure.orchestrate import ProgressSink
from parity.model.checks import (
    CheckFigures,
    CheckGate,
    CheckResult,
    CheckSettings,
    CheckSides,
    Gate,
    Slope,
    SlopeGate,
    SoakFigures,
)
from parity.model.job import SoakPlan
from parity.model.metrics import SoakWindow
from parity.request import CheckRequest
from parity.stats import slope_ci

MIB = 1024 * 1024
MIN_WINDOWS = 8


def fmt_duration(seconds: float) -> str:
    for unit, size in (("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _memory(
    kept: Sequence[SoakWindow],
    done: np.ndarray,
    ends: list[float],
    per_min: float,
    bound: float,
    host: bool,
) -> SlopeGate | None:
    values = [w.host_rss if host else w.device_allocated for w in kept]
    if not all(isinstance(v, int) for v in values):
        return None
    ints = [int(v or 0) for v in values]
    name = "host memory growth" if host else "device memory growth"
    gate = slope_gate(
        name, [float(d) for d in done], [float(v) for v in ints], per_min / MIB, bound, "MiB/min"
    )
    per_step = slope_ci([float(d) for d in done], [float(v) for v in ints])
    by_time = slope_ci([x / 60.0 for x in ends], [float(v) for v in ints])
    figure = replace(
        gate.figure,
        bytes_per_step=per_step.slope if per_step else None,
        bytes_per_min_over_time=by_time.slope if by_time else None,
        first_last_bytes=(ints[0], ints[-1]),
    )
    return replace(gate, figure=figure)


def analyse(bundle: Bundle, request: CheckRequest) -> tuple[list[CheckGate], SoakFigures]:
    """Gates and figures from a soak bundle's windows."""
    soak = bundle.metrics.soak if bundle.metrics else None
    windows = list(soak.windows) if soak else []
    duration = soak.duration_s if soak else 0.0
    kept = [w for w in windows if w.t_s >= request.warmup * duration]
    figures = SoakFigures(
        duration_s=duration,
        steps=soak.steps if soak else None,
        windows=len(windows),
        windows_used=len(kept),
        warmup_s=request.warmup * duration,
    )
    if len(kept) < MIN_WINDOWS:
        detail = (
            f"{len(kept)} windows after warm-up, at least {MIN_WINDOWS} needed: run longer "
            "(a step took longer than a window)"
        )
        return [Gate(name="enough windows", passed=False, detail=detail)], figures
    t = [w.t_s for w in kept]
    lat = [w.median_s for w in kept]
    ref = statistics.median(lat)
    drift = slope_gate(
        "latency drift", t, lat, 3600.0 / ref, request.max_drift, "relative per hour"
    )
    # memory against steps done: a leak grows per request, and the machine's load changes
    # the step rate, not the bytes per step; stated per minute at the mean throughput
    done = np.cumsum([w.steps or 1 for w in windows])[len(windows) - len(kept) :]
    ends = [w.end_s for w in kept]
    span_min = (ends[-1] - ends[0]) / 60.0
    per_min = float(done[-1] - done[0]) / span_min if span_min > 0 else 0.0
    host = _memory(kept, done, ends, per_min, request.max_host_growth, host=True)
    device = _memory(kept, done, ends, per_min, request.max_device_growth, host=False)
    missing = {}
    if host is None:
        missing["host_rss_growth"] = "the host's current RSS is not readable here"
    if device is None:
        missing["device_allocated_growth"] = f"{bundle.side} reports no allocated device memory"
    figures = SoakFigures(
        duration_s=duration,
        steps=figures.steps,
        windows=len(windows),
        windows_used=len(kept),
        warmup_s=figures.warmup_s,
        median_step_s=ref,
        first_last_window_median_s=(lat[0], lat[-1]),
        steps_per_min=per_min,
        latency_drift=drift.figure,
        host_rss_growth=host.figure if host else None,
        device_allocated_growth=device.figure if device else None,
        not_measured=missing,
    )
    return [drift, *(g for g in (host, device) if g is not None)], figures


def _pm(fig: Slope | None, unit: str, scale: float) -> str:
    if fig is None or fig.slope is None or fig.low is None or fig.high is None:
        return "not measured"
    return f"{fig.slope * scale:+.3g}{unit} [{fig.low * scale:+.3g}, {fig.high * scale:+.3g}]"


def soak(request: CheckRequest, *, progress: ProgressSink | None = None) -> CheckResult:
    duration = request.duration_s or 600.0
    run = start(request, progress)
    window = window_for(duration)
    job = run.template.job(
        "soak",
        request.target,
        SoakPlan(duration_s=duration, window_s=window),
        timeout_s=duration + request.timeout_s,
    )
    bundles = {"soak": run.orch.run(job, run.out / "soak", label="soak")}
    gates: list[CheckGate] = [parts_ran(bundles)]
    figures = CheckFigures()
    if gates[0].passed:
        more, soak_figures = analyse(bundles["soak"], request)
        gates += more
        figures = CheckFigures(soak=soak_figures)
    soaked = figures.soak
    evidence = (
        f"parity check soak: {run.template.description.name} ({request.workload.size}) on "
        f"{request.target} for "
        f"{fmt_duration(duration)}: latency drift "
        f"{_pm(soaked.latency_drift if soaked else None, '%/h', 100)}, host memory "
        f"{_pm(soaked.host_rss_growth if soaked else None, ' MiB/min', 1)}"
    )
    return finish(
        run,
        sides=CheckSides(device=request.target),
        settings=CheckSettings(
            duration_s=duration,
            window_s=window,
            warmup=request.warmup,
            max_drift_per_hour=request.max_drift,
            max_host_growth_mib_per_min=request.max_host_growth,
            max_device_growth_mib_per_min=request.max_device_growth,
        ),
        gates=gates,
        figures=figures,
        bundles=bundles,
        evidence=evidence,
    )
