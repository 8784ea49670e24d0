"""Timing a workload fed by a data loader: the input side apart from the step.

Per step, three regions, each read with ``perf_counter_ns`` (``PipelineTimer.clock``, the
seam tests swap for a fake clock):

- **wait**: ``next()`` on the loader's iterator, on the host (a loader that runs out
  starts again, a new epoch, and that start is waited for too);
- **copy**: every tensor of the batch to the side's device, then the device's
  synchronize, so the copy is done before the step starts;
- **compute**: ``runner.step_batch(i, batch)``, then the synchronize.

A step's sample is the sum, as the loop a user writes would take (plus the synchronize
after the copy, which a loop that overlaps copy and compute does not have: the copy
figure is the copy's cost, not what overlapping would hide of it).

Afterwards, ``prefetched`` steps again over the first few batches, kept on the device
since they were copied: the step time without any input cost, so that a loader that
slows the step down without being waited for (workers competing for the host's cores)
shows too. Then as many loader-fed steps again (``refed``, not counted among the steady
steps), so that the pass is bracketed in time: a machine that got faster or slower
between the steps and the pass shows in the steps after it.
``parity.model.metrics.InputPipeline`` turns the samples into the figures and
the input-bound decision.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import ClassVar

import torch

from parity.errors import WorkloadError
from parity.workloads.base import Batch

#: batches kept on the device for the prefetched pass (device memory: a few batches)
KEEP_BATCHES = 4
#: steps of the prefetched pass: half the workload's, within these bounds
PREFETCH_STEPS = (3, 20)
NS = 1e-9
METHOD = (
    "per steady step: wait = next() on the loader (host); copy = the batch to the device "
    "and a synchronize; step = wait + copy + the step and a synchronize; prefetched = the "
    "step again over batches already on the device"
)


def works_beside(loader: Iterable[Batch]) -> bool | None:
    """Whether ``loader`` does work beside the step: a ``DataLoader`` with worker processes
    or memory pinning; not a list, a tuple or a ``DataLoader`` without either; None for
    any other iterable (it may start threads of its own)."""
    if isinstance(loader, list | tuple):
        return False
    from torch.utils.data import DataLoader

    if isinstance(loader, DataLoader):
        return loader.num_workers > 0 or bool(loader.pin_memory)
    return None


def prefetch_steps(steps: int) -> int:
    low, high = PREFETCH_STEPS
    return max(low, min(high, steps // 2))


class PipelineTimer:
    """Times steps fed by ``loader``: wait, copy and compute per step (ns)."""

    clock: ClassVar[Callable[[], int]] = time.perf_counter_ns

    def __init__(
        self,
        loader: Iterable[Batch],
        step_batch: Callable[[int, dict[str, torch.Tensor]], None],
        *,
        device: torch.device,
        synchronize: Callable[[], None],
        name: str,
        same_input: bool = False,
    ) -> None:
        self.loader = loader
        self.step_batch = step_batch
        self.device = device
        self.synchronize = synchronize
        self.name = name
        #: the anti-caching compliance run: wait and copy as usual, step on the first batch
        self.same_input = same_input
        self.iterator: Iterator[Batch] | None = None
        self.kept: list[dict[str, torch.Tensor]] = []
        self.wait_ns: list[int] = []
        self.copy_ns: list[int] = []

    def _next(self) -> Batch:
        if self.iterator is None:
            self.iterator = iter(self.loader)
        try:
            return next(self.iterator)
        except StopIteration:
            pass
        self.iterator = iter(self.loader)  # a new epoch
        try:
            return next(self.iterator)
        except StopIteration:
            raise WorkloadError(
                f"the loader of workload {self.name} yielded no batches: make_loader must "
                "return an iterable of at least one batch"
            ) from None

    def _to_device(self, batch: Batch) -> dict[str, torch.Tensor]:
        if not isinstance(batch, Mapping) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in batch.items()
        ):
            raise WorkloadError(
                f"the loader of workload {self.name} yielded a {type(batch).__name__}: yield "
                "a dict of named tensors, e.g. {'x': x, 'y': y} (a DataLoader's collate_fn "
                "or a Dataset that returns dicts)"
            )
        return {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}

    def run(self, start: int, count: int, *, record: bool = True) -> list[int]:
        """Steps ``start .. start+count-1``; each sample (wait + copy + compute) in ns.
        ``record``: keep each step's wait and copy (the steady steps' figures)."""
        clock, sync = type(self).clock, self.synchronize
        samples = []
        for i in range(start, start + count):
            t0 = clock()
            batch = self._next()
            t1 = clock()
            on_device = self._to_device(batch)
            sync()
            t2 = clock()
            if len(self.kept) < KEEP_BATCHES:
                self.kept.append(on_device)
            self.step_batch(i, self.kept[0] if self.same_input else on_device)
            sync()
            t3 = clock()
            if record:
                self.wait_ns.append(t1 - t0)
                self.copy_ns.append(t2 - t1)
            samples.append(t3 - t0)
        return samples

    def prefetched(self, start: int, count: int) -> list[int]:
        """``count`` more steps over the kept batches, already on the device (ns each)."""
        clock, sync = type(self).clock, self.synchronize
        samples = []
        for n, i in enumerate(range(start, start + count)):
            t0 = clock()
            self.step_batch(i, self.kept[n % len(self.kept)])
            sync()
            samples.append(clock() - t0)
        return samples

    def release(self) -> None:
        """Drop the kept batches and the iterator (a DataLoader's workers end with it)."""
        self.kept.clear()
        self.iterator = None
