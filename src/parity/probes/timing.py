"""Timing steps: ``perf_counter_ns`` around work that ends with the device's synchronize.

``StepTimer.clock`` is the seam tests swap for a seeded fake clock. The loop does nothing
but call, synchronise and read the clock, so parity's own overhead stays out of the timed
region (``benchmarks/overhead.py`` measures it against a bare loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar


class StepTimer:
    """Times ``step(i)`` followed by ``synchronize()``, one sample per step."""

    clock: ClassVar[Callable[[], int]] = time.perf_counter_ns

    def __init__(self, step: Callable[[int], None], synchronize: Callable[[], None]) -> None:
        self.step = step
        self.synchronize = synchronize

    def run(self, start: int, count: int) -> list[int]:
        """Steps ``start .. start+count-1``; each sample in nanoseconds."""
        clock, step, sync = type(self).clock, self.step, self.synchronize
        samples = []
        for i in range(start, start + count):
            t0 = clock()
            step(i)
            sync()
            samples.append(clock() - t0)
        return samples

    def once(self, fn: Callable[[], object]) -> int:
        """Time one call of ``fn`` followed by a synchronize."""
        clock = type(self).clock
        t0 = clock()
        fn()
        self.synchronize()
        return clock() - t0
