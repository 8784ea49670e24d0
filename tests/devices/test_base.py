"""The generic device adapter on the asynchronous parityfake device: memory figures are
read after the queued work is done, and a peak reset waits for it first."""

from __future__ import annotations

import torch

from parity.devices import get_device
from tests.conftest import HAVE_FAKEDEVICE, needs_fakedevice

if HAVE_FAKEDEVICE:
    from parity.testing import fakedevice

DEV = "parityfake"
COST_US = 2000.0
KERNELS = 100  # 0.2 s of device time: far longer than launching them takes
BLOCK = 1 << 20


def _launch(x: torch.Tensor) -> torch.Tensor:
    for _ in range(KERNELS):
        x = x + 1
    return x


@needs_fakedevice
def test_memory_peaks_count_allocations_still_queued() -> None:
    device = get_device(DEV)
    x = torch.zeros(4, device=DEV)
    device.reset_peak_memory()
    before = fakedevice.memory_allocated()
    with fakedevice.asynchronous(COST_US):
        y = _launch(x)
        block = torch.empty(BLOCK, dtype=torch.uint8, device=DEV)
        queued = fakedevice.queued_ns()  # the device has not reached the allocation yet
        peaks = device.memory_peaks()
    assert queued > 0
    assert peaks.allocated == before + y.nbytes + block.nbytes
    assert peaks.reserved == before + y.nbytes + block.nbytes


@needs_fakedevice
def test_a_peak_reset_waits_for_the_queued_work() -> None:
    # a block allocated and freed by queued work belongs to the phase before the reset
    device = get_device(DEV)
    x = torch.zeros(4, device=DEV)
    with fakedevice.asynchronous(COST_US):
        y = _launch(x)
        block = torch.empty(BLOCK, dtype=torch.uint8, device=DEV)
        del block
        queued = fakedevice.queued_ns()
        device.reset_peak_memory()
        after_reset = fakedevice.memory_allocated()
        peaks = device.memory_peaks()
    assert queued > 0
    assert peaks.allocated == after_reset
    assert after_reset >= y.nbytes
