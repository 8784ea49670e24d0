"""How long a host side's intra-op threads take to share a small piece of work: a figure of
where the machine placed them while the steps ran.

On a virtual machine the host moves the vCPUs under the guest, unseen by it: on the 2-vCPU
AMD EPYC this project measures on, a two-thread process's cores sometimes share a cache
(a cache line goes from one to the other and back in about 60 ns, read with two pinned
threads) and sometimes do not (about 330 ns), for seconds at a time. An in-place add over
128K floats that two threads share took 6.3 µs in the first placement and 9.0 µs in the
second, no quicker than one thread (8.7 µs), and a float32 step of the demo went from 6 to
10 ms with it while the bf16 step moved far less: the ratio itself changes with the
placement (``benchmarks/README.md``). Nothing in ``/proc`` shows it (no steal time).

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
