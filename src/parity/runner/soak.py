"""The worker's ``soak`` mode: inference or generation steps for a fixed duration.

Settings: ``duration_s`` (how long the steps run after the first one) and ``window_s``.
The loop times each step (ending with the device's synchronize) and closes a window every
``window_s``: the window's median, mean and maximum step latency, the host's *current*
RSS and the device's currently allocated bytes. ``metrics.json`` keeps the windows under
``soak`` and, as ``step_samples_s``, a systematic sample of at most 65,536 steps (every
step until the buffer is full, then every 2nd, 4th, ...), so that it has the usual shape.

Whatever the loop itself keeps (windows, samples) lives in numpy buffers allocated and
touched before the first timed step, so that parity's own bookkeeping never reads as
memory growth; a runner's per-step record of token times is drained after every step
for the same reason.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

import numpy as np
import torch

from parity.bundle import MANIFEST, write_json
from parity.devices.base import Device
from parity.probes import memory
from parity.runner.checkpoint import ModeRun
from parity.workloads.base import StepRunner

NS = 1e-9
CAP = 1 << 16
_STATM = "/proc/self/statm"


def current_rss() -> int | None:
    """The resident set size now (Linux), or None where it cannot be read."""
    try:
        with open(_STATM) as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def device_allocated(device: Device) -> int | None:
    """Bytes the device's caching allocator holds for tensors now; None on the CPU."""
    if device.type == "cpu":
        return None
    for owner in (device.module(), getattr(torch, "accelerator", None)):
        fn = getattr(owner, "memory_allocated", None)
        if callable(fn):
            with contextlib.suppress(Exception):
                return int(fn())
    return None


class Reservoir:
    """A systematic sample of at most ``cap`` (time, value) pairs, in touched buffers."""

    def __init__(self, cap: int = CAP) -> None:
        self.t = np.full(cap, -1.0)
        self.v = np.full(cap, -1.0)
        self.n = 0
        self.stride = 1
        self.seen = 0

    def add(self, t: float, v: float) -> None:
        index, self.seen = self.seen, self.seen + 1
        if index % self.stride:
            return
        if self.n == self.t.size:  # full: keep every other sample, halve the rate
            half = self.t.size // 2
            self.t[:half] = self.t[::2].copy()
            self.v[:half] = self.v[::2].copy()
            self.n, self.stride = half, self.stride * 2
            if index % self.stride:
                return
        self.t[self.n], self.v[self.n] = t, v
        self.n += 1


class Windows:
    """The soak's windows in columns allocated and touched up front (no growth while it
    runs); ``-1`` marks a figure the platform cannot read."""

    COLUMNS = (
        "t_s",
        "end_s",
        "steps",
        "median_s",
        "mean_s",
        "max_s",
        "ttft_median_s",
        "host_rss",
        "device_allocated",
    )
    INTEGER = ("steps", "host_rss", "device_allocated")

    def __init__(self, capacity: int) -> None:
        self.data = np.full((capacity, len(self.COLUMNS)), -1.0)
        self.n = 0

    def add(self, *values: float | int | None) -> None:
        if self.n < self.data.shape[0]:
            self.data[self.n] = [-1.0 if v is None else float(v) for v in values]
            self.n += 1

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for row in self.data[: self.n].tolist():
            record: dict[str, Any] = {}
            for name, value in zip(self.COLUMNS, row, strict=True):
                if value < 0:
                    record[name] = None
                else:
                    record[name] = int(value) if name in self.INTEGER else value
            out.append(record)
        return out


def _first_token_ns(runner: StepRunner) -> int | None:
    """A generation runner's time to the first token of its last step; drains its record."""
    times = runner.token_times_ns()
    if not isinstance(times, list):
        return None
    first = times[-1][0] if times and times[-1] else None
    times.clear()
    return first


def run_soak(run: ModeRun) -> None:
    from parity.runner.phases import build_metrics, write_numerics

    s, runner, device = run.job.settings, run.runner, run.device
    duration_ns = int(float(s["duration_s"]) * 1e9)
    window_ns = max(1, int(float(s["window_s"]) * 1e9))
    sync, clock = device.synchronize, time.perf_counter_ns
    reservoir = Reservoir()
    lat = np.full(CAP, -1.0)  # one window's latencies (the first CAP steps of it)
    ttft = np.full(CAP, -1.0)
    table = Windows(min(1 << 20, duration_ns // window_ns + 16))
    with run.mode:
        run.set_phase("first step")
        run.emit("phase", phase="first step")
        t0 = clock()
        runner.step(0)
        sync()
        first_ns = clock() - t0
        _first_token_ns(runner)
        device.reset_peak_memory()
        memory.reset_host_peak()
        run.set_phase("soak")
        run.emit("phase", phase="soak", duration_s=duration_ns * NS)
        start = win_start = clock()
        i, k, k_tt, n_win = 1, 0, 0, 0
        while True:
            a = clock()
            runner.step(i)
            sync()
            b = clock()
            i += 1
            tt = _first_token_ns(runner)
            if k < CAP:
                lat[k] = (b - a) * NS
                k += 1
            if tt is not None and k_tt < CAP:
                ttft[k_tt] = tt * NS
                k_tt += 1
            n_win += 1
            reservoir.add((b - start) * NS, (b - a) * NS)
            done = b - start >= duration_ns
            if b - win_start >= window_ns or done:
                part = lat[:k]
                table.add(
                    ((win_start + b) / 2 - start) * NS,
                    (b - start) * NS,
                    n_win,
                    float(np.median(part)),
                    float(part.mean()),
                    float(part.max()),
                    float(np.median(ttft[:k_tt])) if k_tt else None,
                    current_rss(),
                    device_allocated(device),
                )
                run.emit("progress", done=int((b - start) * NS), steps=int(duration_ns * NS))
                k = k_tt = n_win = 0
                win_start = b
            if done:
                break
        elapsed_s = (clock() - start) * NS
        mem_steps = {"device": device.memory_peaks(), "host_peak_rss": memory.host_peak_rss()}
        run.set_phase("finish")
        numerics = runner.finish()
    windows = table.rows()
    samples = [first_ns] + [int(v * 1e9) for v in reservoir.v[: reservoir.n]]
    metrics = build_metrics(samples, run.workload, run.startup, run.load_ns, {"steps": mem_steps})
    metrics["mode"] = "soak"
    metrics["soak"] = {
        "duration_s": elapsed_s,
        "window_s": window_ns * NS,
        "steps": i,
        "first_step_s": first_ns * NS,
        "step_samples_every": reservoir.stride,
        "rss_source": "/proc/self/statm" if windows and windows[0]["host_rss"] else None,
        "windows": windows,
    }
    write_json(run.out / "metrics.json", metrics)
    write_numerics(run.out, numerics)
    run.manifest.update(status="ok", reason=None, finished_unix=time.time())
    run.emit("phase", phase="done")
    write_json(run.out / MANIFEST, run.manifest)
