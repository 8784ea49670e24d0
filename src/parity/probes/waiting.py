"""How long a process's threads waited for a core while they could run: the run delay the
kernel keeps per thread (``/proc/self/task/*/schedstat``, its second field, in
nanoseconds). Other work holding the cores shows here in the process that lost them,
whatever the step does (computing, or sleeping and waking), where the machine-wide
figure (``runner.cpu``) cannot say which side's processes paid for it.

:class:`Waiting` is started at the steps' start; ``share()`` at their end gives the
seconds waited per second of the steps (all threads together: 0 on a machine with a core
free whenever a thread wanted one). None where the kernel does not keep it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_TASKS = Path("/proc/self/task")


def run_delay_s() -> float | None:
    """Seconds this process's live threads have waited on a run queue; None where the
    kernel does not say."""
    try:
        tasks = os.listdir(_TASKS)
    except OSError:
        return None
    total, seen = 0, False
    for tid in tasks:
        try:
            fields = (_TASKS / tid / "schedstat").read_text().split()
        except OSError:  # a thread that ended meanwhile
            continue
        if len(fields) >= 2:
            total += int(fields[1])
            seen = True
    return total / 1e9 if seen else None


class Waiting:
    """The run delay over a stretch of wall time (see the module)."""

    def __init__(self) -> None:
        self.began, self.delay = time.perf_counter(), run_delay_s()

    def share(self) -> float | None:
        """Seconds waited for a core per second since the start (None: not known)."""
        now, wall = run_delay_s(), time.perf_counter() - self.began
        if now is None or self.delay is None or wall <= 0:
            return None
        return max(0.0, now - self.delay) / wall
