"""``soak`` (``parity check soak``): inference or generation steps for a fixed duration.

The plan (a ``SoakPlan``): ``duration_s`` (how long the steps run after the first one) and
``window_s``.
The loop times each step (ending with the device's synchronize) and closes a window every
``window_s``: the window's median, mean and maximum step latency, the host's RSS floor
and the device's currently allocated bytes. The RSS floor is the smallest of up to
``RSS_READS`` reads spread over the window's steps (outside the timed region): a single
read lands wherever the allocator's heap top happens to be (it moves by megabytes from
step to step), while a leak raises the floor. ``metrics.json`` keeps the windows under
``soak`` and, as ``step_samples_s``, a systematic sample of at most 65,536 steps (every
step until the buffer is full, then every 2nd, 4th, ...), so that it has the usual shape.

Whatever the loop itself keeps (windows, samples) lives in numpy buffers allocated and
touched before the first timed step, so that parity's own bookkeeping never reads as
memory growth; a runner's per-step record of token times is drained after every step
for the same reason.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from parity.bundle import METRICS
from parity.model.codec import decode
from parity.model.job import Mode as ModeName
from parity.model.job import SoakPlan
from parity.model.metrics import Memory, SoakFigures, SoakWindow
from parity.runner.documents import Steps, write_outputs
from parity.runner.load import Loaded, load, memory_phase, reset_peaks
from parity.runner.modes.base import Mode
from parity.runner.session import NS, SideSession
from parity.workloads.base import StepRunner

CAP = 1 << 16
RSS_READS = 32
_STATM = "/proc/self/statm"


def current_rss() -> int | None:
    """The resident set size now (Linux), or None where it cannot be read."""
    try:
        with open(_STATM) as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class Floor:
    """The smallest RSS read since the last ``take``; None where it cannot be read."""

    def __init__(self) -> None:
        self.low: int | None = None

    def read(self) -> None:
        rss = current_rss()
        if rss is not None and (self.low is None or rss < self.low):
            self.low = rss

    def take(self) -> int | None:
        """The floor (with one more read at the window's end), then start afresh."""
        self.read()
        low, self.low = self.low, None
        return low


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

    def rows(self) -> tuple[SoakWindow, ...]:
        out = []
        for row in self.data[: self.n].tolist():
            record: dict[str, float | int | None] = {}
            for name, value in zip(self.COLUMNS, row, strict=True):
                if value < 0:
                    record[name] = None
                else:
                    record[name] = int(value) if name in self.INTEGER else value
            out.append(decode(SoakWindow, record))
        return tuple(out)


def _first_token_ns(runner: StepRunner) -> int | None:
    """A generation runner's time to the first token of its last step; drains its record."""
    times = runner.token_times_ns()
    if not isinstance(times, list):
        return None
    first = times[-1][0] if times and times[-1] else None
    times.clear()
    return first


@dataclass(kw_only=True)
class Soaked:
    """What the soak loop kept."""

    steps: int
    first_ns: int
    elapsed_s: float
    reservoir: Reservoir
    table: Windows


class Soak(Mode):
    name: ClassVar[ModeName] = "soak"

    def run(self, session: SideSession) -> None:
        plan = session.job.plan_of(SoakPlan)
        loaded = load(session)
        with session.region():
            soaked = soak(session, loaded, plan)
            mem = Memory(steps=memory_phase(session))
            session.enter("finish", announce=False)
            numerics = loaded.runner.finish()
        windows = soaked.table.rows()
        samples = [soaked.first_ns] + [
            int(v * 1e9) for v in soaked.reservoir.v[: soaked.reservoir.n]
        ]
        steps = Steps.of(samples)
        resolved = session.manifest.resolved
        metrics = steps.metrics(
            phases=steps.phases(startup=session.startup(), load_s=loaded.load_s),
            memory=mem,
            items=resolved.items_per_step if resolved is not None else None,
        )
        figures = SoakFigures(
            duration_s=soaked.elapsed_s,
            window_s=plan.window_s,
            steps=soaked.steps,
            first_step_s=soaked.first_ns * NS,
            step_samples_every=soaked.reservoir.stride,
            rss_source=_STATM if windows and windows[0].host_rss else None,
            windows=windows,
        )
        session.write(METRICS, replace(metrics, soak=figures))
        write_outputs(session, numerics)
        session.finish()


def soak(session: SideSession, loaded: Loaded, plan: SoakPlan) -> Soaked:
    """The first step, then steps until ``duration_s`` has passed, closing windows."""
    runner, device = loaded.runner, session.device
    duration_ns = int(plan.duration_s * 1e9)
    window_ns = max(1, int(plan.window_s * 1e9))
    sync, clock = device.synchronize, time.perf_counter_ns
    reservoir = Reservoir()
    lat = np.full(CAP, -1.0)  # one window's latencies (the first CAP steps of it)
    ttft = np.full(CAP, -1.0)
    table = Windows(min(1 << 20, duration_ns // window_ns + 16))
    session.enter("first step")
    t0 = clock()
    runner.step(0)
    sync()
    first_ns = clock() - t0
    _first_token_ns(runner)
    reset_peaks(session)
    session.enter("soak", duration_s=duration_ns * NS)
    start = win_start = clock()
    i, k, k_tt, n_win = 1, 0, 0, 0
    floor, every = Floor(), 1
    while True:
        a = clock()
        runner.step(i)
        sync()
        b = clock()
        i += 1
        if n_win % every == 0:
            floor.read()
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
                floor.take(),
                device.memory_allocated(),
            )
            session.progress(int((b - start) * NS), int(duration_ns * NS))
            every = max(1, (n_win + 1) // RSS_READS)
            k = k_tt = n_win = 0
            win_start = b
        if done:
            break
    elapsed_s = (clock() - start) * NS
    return Soaked(steps=i, first_ns=first_ns, elapsed_s=elapsed_s, reservoir=reservoir, table=table)
