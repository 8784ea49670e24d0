"""Shared pieces of the benchmarks: a ~1 ms CPU step, the machine's load, a table printer.

Not a benchmark itself; the scripts next to it import it (``python benchmarks/NAME.py``
puts this folder first on ``sys.path``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence

import torch

TARGET_STEP_S = 1e-3


def noop() -> None:
    """The synchronize of a CPU side: nothing to wait for."""


def load_line() -> str:
    """Load averages (1, 5, 15 min) and the core count, as ``uptime`` shows them."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def make_matmul_step(
    target_s: float = TARGET_STEP_S,
) -> tuple[Callable[[int], None], int, float]:
    """A step that multiplies two ``n x n`` float32 matrices on one thread in ~``target_s``.

    Returns ``(step, n, measured_median_s)``; ``n`` is found by scaling with the cube of the
    measured time, then the final size is timed over 200 calls.
    """
    torch.set_num_threads(1)
    torch.manual_seed(0)

    def median_time(n: int, calls: int) -> float:
        a, b = torch.randn(n, n), torch.randn(n, n)
        c = torch.empty(n, n)
        for _ in range(5):
            torch.mm(a, b, out=c)
        times = []
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            torch.mm(a, b, out=c)
            times.append(time.perf_counter_ns() - t0)
        return statistics.median(times) * 1e-9

    n = 128
    for _ in range(6):
        t = median_time(n, 30)
        new = max(16, round(n * (target_s / t) ** (1 / 3)))
        if abs(new - n) <= 2:
            break
        n = new
    a, b = torch.randn(n, n), torch.randn(n, n)
    c = torch.empty(n, n)

    def step(i: int) -> None:
        torch.mm(a, b, out=c)

    return step, n, median_time(n, 200)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain, right-aligned text table."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
