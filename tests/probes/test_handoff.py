"""The thread handoff probe: a time with several intra-op threads, none with one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from parity.devices.registry import get_device
from parity.probes.handoff import handoff_ns


@pytest.fixture
def threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_two_threads_give_a_time_and_one_gives_none(threads: None) -> None:
    torch.set_num_threads(2)
    took = handoff_ns(repeats=50)
    # an add over 128K floats: microseconds on any machine, never zero or a second
    assert took is not None and 100 < took < 50_000_000
    torch.set_num_threads(1)
    assert handoff_ns(repeats=50) is None


def test_the_cpu_device_computes_on_the_host_and_a_device_that_computes_elsewhere_not() -> None:
    assert get_device("cpu").steps_on_host
    assert not get_device("cuda").steps_on_host
