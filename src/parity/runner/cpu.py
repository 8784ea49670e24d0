"""How much of the machine other processes took while a comparison measured.

The machine's busy CPU time comes from ``/proc/stat`` (all cores: user, nice, system,
irq, softirq, steal); parity's own is this process and every worker it started: spawned
workers through ``RUSAGE_CHILDREN`` once reaped, forked ones as the zygote reports them
(the zygote's own and its reaped children's time, from ``/proc/PID/stat``). What is left is
interference: other processes competing for the cores while the sides were timed. On a
machine without ``/proc`` the figure is unknown (None), never guessed.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from parity.model.side import Interference

_STAT = Path("/proc/stat")
#: /proc/stat's cpu line: user nice system idle iowait irq softirq steal (guest is in user)
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def _ticks() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100.0


def machine_busy_s() -> float | None:
    """CPU seconds all cores have spent busy since boot; None without ``/proc/stat``."""
    try:
        first = _STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    values = [float(v) for v in first[1:]]
    return sum(values[i] for i in _BUSY_FIELDS if i < len(values)) / _ticks()


def process_cpu_s(pid: int) -> float:
    """User and system CPU seconds of a live process and of its reaped children (0 where
    it cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[-1].split()
    # after "pid (comm)": state is field 0; utime, stime, cutime, cstime are 11 to 14
    return sum(float(f) for f in fields[11:15]) / _ticks()


def own_cpu_s() -> float:
    """This process's CPU seconds and those of its reaped children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


@dataclass
class CpuWatch:
    """Started when measuring starts; ``finish()`` says what other processes took.
    ``extra`` returns CPU seconds parity spent outside this process and its reaped
    children (the zygote and its forked workers)."""

    extra: Callable[[], float]
    wall: float = 0.0
    busy: float | None = None
    own: float = 0.0

    def __post_init__(self) -> None:
        self.wall, self.busy, self.own = time.monotonic(), machine_busy_s(), self._own()

    def _own(self) -> float:
        return own_cpu_s() + self.extra()

    def finish(self) -> Interference | None:
        busy = machine_busy_s()
        if busy is None or self.busy is None:
            return None
        wall = time.monotonic() - self.wall
        cores = os.cpu_count() or 1
        other = max(0.0, (busy - self.busy) - (self._own() - self.own))
        share = min(1.0, other / (cores * wall)) if wall > 0 else 0.0
        return Interference(share=share, other_cpu_s=other, cores=cores, wall_s=wall)
