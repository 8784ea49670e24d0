"""``parity check soak``: sustained inference or generation, drift and growth slopes.

One fresh worker (``soak`` mode, ``parity.runner.soak``) runs the workload's steps back to
back for ``--duration`` and closes a window every ``duration / 100`` (0.1 s to 60 s):
median step latency, current host RSS, device allocated bytes. The first ``--warmup``
fraction of the run (allocator caches filling, clocks settling) is left out, then:

- **latency drift**: the least-squares slope of the windows' median step latency over
  time, relative to the median latency, per hour;
- **host memory growth**: the slope of RSS over the steps done (bytes per step: a leak
  grows per request, and a loaded machine changes the step rate, not the bytes per
  step), stated in bytes per minute at the soak's mean throughput; the slope over time
  is reported beside it;
- **device memory growth**: the same for the device's allocated bytes (where the device
  reports them; the CPU has no device allocator).

Each slope has a 95% t interval that allows for autocorrelated windows (see
``parity.stats.slope_ci``). A gate fails when the whole
interval lies above its bound (``--max-drift`` per hour, ``--max-host-growth`` and
``--max-device-growth`` in MiB per minute): the drift or growth is then beyond the bound
with 95% confidence. An interval that reaches above the bound without lying above it
passes and is flagged ``conclusive: false``: run longer to narrow it.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np

from parity.bundle import Bundle
from parity.checks import DEFAULT_MAX_DRIFT, DEFAULT_MAX_GROWTH_MIB, DEFAULT_WARMUP
from parity.checks.common import (
    CheckResult,
    Part,
    ProgressFn,
    check_side,
    default_out,
    finish,
    fmt_duration,
    fresh_out,
    parts_ran,
    prepare,
    run_parts,
)
from parity.errors import UsageError
from parity.spec import WorkloadSpec
from parity.stats import SlopeCI, slope_ci
from parity.workloads.frozen import freeze

MIB = 1024 * 1024
MIN_WINDOWS = 8


def window_for(duration_s: float) -> float:
    return min(60.0, max(0.1, duration_s / 100))


def _gate(
    name: str, fit: SlopeCI | None, scale: float, bound: float, unit: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A slope gate: fails when the interval (scaled to ``unit``) lies above ``bound``."""
    if fit is None:
        figure = {"slope": None, "low": None, "high": None, "unit": unit, "bound": bound}
        return {"name": name, "passed": False, "detail": "too few points for a slope"}, figure
    slope, low, high = (float(v * scale) for v in (fit.slope, fit.low, fit.high))
    figure = {
        "slope": slope,
        "low": low,
        "high": high,
        "unit": unit,
        "bound": bound,
        "conclusive": high <= bound or low > bound,
        "method": fit.method,
        "n": fit.n,
    }
    passed = low <= bound
    detail = f"{slope:+.3g} {unit} [95% {low:+.3g}, {high:+.3g}], bound {bound:g}"
    if not passed:
        detail += ": beyond the bound"
    elif high > bound:
        detail += ": not excluded (run longer)"
    return {"name": name, "passed": passed, "detail": detail, **figure}, figure


def analyse(
    bundle: Bundle,
    *,
    warmup: float,
    max_drift: float,
    max_host_growth: float,
    max_device_growth: float,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    soak = bundle.metrics.get("soak") or {}
    windows = list(soak.get("windows") or [])
    duration = float(soak.get("duration_s") or 0.0)
    kept = [w for w in windows if w["t_s"] >= warmup * duration]
    figures: dict[str, Any] = {
        "duration_s": duration,
        "steps": soak.get("steps"),
        "windows": len(windows),
        "windows_used": len(kept),
        "warmup_s": warmup * duration,
    }
    if len(kept) < MIN_WINDOWS:
        gate = {
            "name": "enough windows",
            "passed": False,
            "detail": f"{len(kept)} windows after warm-up, at least {MIN_WINDOWS} needed: "
            "run longer (a step took longer than a window)",
        }
        return [gate], figures
    t = [float(w["t_s"]) for w in kept]
    lat = [float(w["median_s"]) for w in kept]
    ref = statistics.median(lat)
    figures["median_step_s"] = ref
    figures["first_last_window_median_s"] = [lat[0], lat[-1]]
    gates = []
    drift, figures["latency_drift"] = _gate(
        "latency drift", slope_ci(t, lat), 3600.0 / ref, max_drift, "relative per hour"
    )
    gates.append(drift)
    # memory against steps done: a leak grows per request, and the machine's load changes
    # the step rate, not the bytes per step; stated per minute at the mean throughput
    done = np.cumsum([int(w.get("steps") or 1) for w in windows])[len(windows) - len(kept) :]
    ends = [float(w.get("end_s", w["t_s"])) for w in kept]
    span_min = (ends[-1] - ends[0]) / 60.0
    per_min = float(done[-1] - done[0]) / span_min if span_min > 0 else 0.0
    figures["steps_per_min"] = per_min
    for key, name, bound, label in (
        ("host_rss", "host memory growth", max_host_growth, "host_rss_growth"),
        ("device_allocated", "device memory growth", max_device_growth, "device_allocated_growth"),
    ):
        values = [w.get(key) for w in kept]
        if not all(isinstance(x, int) for x in values):
            figures[label] = {
                "detail": "the host's current RSS is not readable here"
                if key == "host_rss"
                else f"{bundle.side} reports no allocated device memory (not measured)"
            }
            continue
        per_step = slope_ci(done, values)
        gate, fig = _gate(name, per_step, per_min / MIB, bound, "MiB/min")
        by_time = slope_ci([x / 60.0 for x in ends], values)
        fig.update(
            bytes_per_step=None if per_step is None else per_step.slope,
            bytes_per_min_over_time=None if by_time is None else by_time.slope,
            first_last_bytes=[values[0], values[-1]],
        )
        figures[label] = fig
        gates.append(gate)
    return gates, figures


def soak(
    wspec: WorkloadSpec,
    device: str,
    duration_s: float,
    *,
    out: Path | None = None,
    warmup: float = DEFAULT_WARMUP,
    max_drift: float = DEFAULT_MAX_DRIFT,
    max_host_growth: float = DEFAULT_MAX_GROWTH_MIB,
    max_device_growth: float = DEFAULT_MAX_GROWTH_MIB,
    timeout_s: float = 900.0,
    progress: ProgressFn | None = None,
) -> CheckResult:
    side = check_side(device, "--device")
    workload, wspec = prepare(wspec)
    if workload.kind not in ("infer", "generate"):
        raise UsageError(
            f"{workload.name} is a {workload.kind} workload: soak runs inference or "
            "generation, e.g. cnn-infer or gpt-generate"
        )
    if not 0 <= warmup < 0.9:
        raise UsageError(f"--warmup {warmup} must be a fraction from 0 to below 0.9, e.g. 0.1")
    for option, value in (
        ("--max-drift", max_drift),
        ("--max-host-growth", max_host_growth),
        ("--max-device-growth", max_device_growth),
    ):
        if not value >= 0:
            raise UsageError(f"{option} {value} must be 0 or more")
    out = out or default_out("soak", workload)
    fresh_out(out)
    frozen = freeze(workload)
    window = window_for(duration_s)
    settings = {"mode": "soak", "duration_s": duration_s, "window_s": window}
    bundles = run_parts(
        [Part(name="soak", side=side, settings=settings)],
        out,
        wspec,
        frozen,
        timeout_s=duration_s + timeout_s,
        progress=progress,
    )
    gates = [parts_ran(bundles)]
    figures: dict[str, Any] = {}
    if gates[0]["passed"]:
        more, figures = analyse(
            bundles["soak"],
            warmup=warmup,
            max_drift=max_drift,
            max_host_growth=max_host_growth,
            max_device_growth=max_device_growth,
        )
        gates += more
    drift = figures.get("latency_drift") or {}
    host = figures.get("host_rss_growth") or {}
    evidence = f"parity check soak: {workload.name} ({wspec.size}) on {side} for " + (
        f"{fmt_duration(duration_s)}: latency drift {_pm(drift, '%/h', 100)}, "
        f"host memory {_pm(host, ' MiB/min', 1)}"
    )
    return finish(
        "soak",
        out,
        workload=workload,
        wspec=wspec,
        frozen=frozen,
        sides={"device": str(side)},
        settings={
            "duration_s": duration_s,
            "window_s": window,
            "warmup": warmup,
            "max_drift_per_hour": max_drift,
            "max_host_growth_mib_per_min": max_host_growth,
            "max_device_growth_mib_per_min": max_device_growth,
        },
        gates=gates,
        figures=figures,
        bundles=bundles,
        evidence=evidence,
    )


def _pm(fig: dict[str, Any], unit: str, scale: float) -> str:
    if fig.get("slope") is None:
        return "not measured"
    return (
        f"{fig['slope'] * scale:+.3g}{unit} [{fig['low'] * scale:+.3g}, {fig['high'] * scale:+.3g}]"
    )
