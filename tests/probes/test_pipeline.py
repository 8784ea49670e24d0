"""``PipelineTimer``: wait, copy and compute per step on a fake clock, epochs, the
identical-input run, the prefetched pass and loaders that break the contract."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import torch

from parity.errors import WorkloadError
from parity.probes.pipeline import KEEP_BATCHES, PipelineTimer, prefetch_steps


class Clock:
    """A fake clock that advances by what the code under test says it spent."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def spend(self, ns: int) -> None:
        self.now += ns


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(PipelineTimer, "clock", fake)
    return fake


def loader(clock: Clock, n: int, wait_ns: int) -> Iterator[dict[str, torch.Tensor]]:
    for i in range(n):
        clock.spend(wait_ns)
        yield {"x": torch.full((2,), float(i))}


class Loader:
    """A re-iterable loader (a new epoch each ``iter``), counting its epochs."""

    def __init__(self, clock: Clock, n: int, wait_ns: int) -> None:
        self.clock, self.n, self.wait_ns, self.epochs = clock, n, wait_ns, 0

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        self.epochs += 1
        return loader(self.clock, self.n, self.wait_ns)


def timer(clock: Clock, source: object, seen: list[tuple[int, float]], **kw: bool) -> PipelineTimer:
    def step(i: int, batch: dict[str, torch.Tensor]) -> None:
        clock.spend(5_000)
        seen.append((i, float(batch["x"][0])))

    return PipelineTimer(
        source,  # type: ignore[arg-type]
        step,
        device=torch.device("cpu"),
        synchronize=lambda: clock.spend(100),
        name="w",
        **kw,
    )


def test_each_step_is_wait_copy_and_compute_and_epochs_restart(clock: Clock) -> None:
    seen: list[tuple[int, float]] = []
    source = Loader(clock, 3, 20_000)
    t = timer(clock, source, seen)
    samples = t.run(0, 5)
    assert t.wait_ns == [20_000] * 5 and t.copy_ns == [100] * 5
    assert samples == [20_000 + 100 + 5_000 + 100] * 5
    assert [x for _, x in seen] == [0, 1, 2, 0, 1] and source.epochs == 2
    assert len(t.kept) == min(5, KEEP_BATCHES)


def test_the_prefetched_pass_steps_over_kept_batches_without_waiting(clock: Clock) -> None:
    seen: list[tuple[int, float]] = []
    t = timer(clock, Loader(clock, 8, 20_000), seen)
    t.run(0, 6)
    seen.clear()
    samples = t.prefetched(6, 6)
    assert samples == [5_100] * 6
    assert [i for i, _ in seen] == list(range(6, 12))
    assert [x for _, x in seen] == [0, 1, 2, 3, 0, 1]
    t.release()
    assert t.kept == [] and t.iterator is None


def test_the_identical_input_run_still_waits_and_copies(clock: Clock) -> None:
    seen: list[tuple[int, float]] = []
    t = timer(clock, Loader(clock, 4, 20_000), seen, same_input=True)
    assert t.run(0, 4) == [25_200] * 4
    assert [x for _, x in seen] == [0, 0, 0, 0]


def test_a_loader_yielding_no_batches_or_tuples_is_a_workload_error(clock: Clock) -> None:
    with pytest.raises(WorkloadError, match="yielded no batches"):
        timer(clock, [], []).run(0, 1)
    with pytest.raises(WorkloadError, match="yielded a tuple: yield a dict of named tensors"):
        timer(clock, [(torch.zeros(1),)], []).run(0, 1)


def test_the_prefetched_pass_is_short() -> None:
    assert [prefetch_steps(n) for n in (2, 10, 30, 100)] == [3, 5, 15, 20]


def test_the_timer_synchronizes_after_the_copy_and_the_step() -> None:
    events: list[str] = []
    ticks = itertools.count()

    class Tick:
        def __call__(self) -> int:
            events.append("clock")
            return next(ticks)

    t = PipelineTimer(
        [{"x": torch.zeros(1)}],
        lambda i, b: events.append("step"),
        device=torch.device("cpu"),
        synchronize=lambda: events.append("sync"),
        name="w",
    )
    with pytest.MonkeyPatch.context() as m:
        m.setattr(PipelineTimer, "clock", Tick())
        t.run(0, 1)
    assert events == ["clock", "clock", "sync", "clock", "step", "sync", "clock"]


def test_what_works_beside_the_step() -> None:
    from torch.utils.data import DataLoader

    from parity.probes.pipeline import works_beside

    batches = [{"x": torch.zeros(2)} for _ in range(4)]
    assert works_beside(batches) is False and works_beside(tuple(batches)) is False
    assert works_beside(DataLoader(batches, batch_size=None)) is False
    assert works_beside(DataLoader(batches, batch_size=None, num_workers=2)) is True
    assert works_beside(iter(batches)) is None  # any other iterable: not known
