"""How long a host side's intra-op threads take to share a small piece of work: a figure of
where the machine placed them while the steps ran.

On a virtual machine the host moves the vCPUs under the guest, unseen by it: a
two-thread process's cores sometimes share a cache and sometimes do not, for seconds at a
time. A small in-place add that two threads share is then measurably slower in one
placement than the other, and so is a step whose threads hand work to each other, while a
step that hands over less (another precision's) moves less: the ratio itself changes with
the placement. Nothing in ``/proc`` shows it (no steal time).

:func:`handoff_ns` times that add (``torch.Tensor.add_``, 64K floats a thread, so that
every thread gets a share at ATen's grain of 32K elements) with the process's own
threads, after its timed steps, so that each process's steps can be read beside the
placement they ran in (``stats.handoff``). With one thread there is nothing to hand off.
"""

from __future__ import annotations

import statistics
import time

#: floats each thread adds (a whole number of ATen's 32768-element grain)
PER_THREAD = 65536
#: timed adds, after :data:`WARM` untimed ones (together a few milliseconds idle)
REPEATS = 400
WARM = 20
#: on a busy machine an add can wait milliseconds for a descheduled thread: the timed
#: adds stop after this long, once :data:`WARM` of them are in
BUDGET_NS = 50_000_000


def handoff_ns(repeats: int = REPEATS) -> float | None:
    """The median time, in nanoseconds, of one in-place add shared by this process's
    intra-op threads (``repeats`` of them, or as many as :data:`BUDGET_NS` holds); None
    with a single thread."""
    import torch

    threads = torch.get_num_threads()
    if threads < 2:
        return None
    x = torch.zeros(threads * PER_THREAD)
    for _ in range(WARM):
        x.add_(1.0)
    clock = time.perf_counter_ns
    times: list[int] = []
    start = clock()
    while len(times) < repeats and (len(times) < WARM or clock() - start < BUDGET_NS):
        t0 = clock()
        x.add_(1.0)
        times.append(clock() - t0)
    return float(statistics.median(times))
