"""Zygotes kept between launchers inside ``keep_zygotes`` (a sweep's cells): the next
launcher that would start the same zygote (same preloaded modules, same environment)
forks from the kept one; any other starts its own; leaving the block ends them all;
outside it a launcher ends its zygote when it closes, as before (slow: real zygotes)."""

from __future__ import annotations

import pytest

from parity.model.spec import parse_side
from parity.runner import kept
from parity.runner.kept import keep_zygotes
from parity.runner.launch import Launcher
from parity.runner.prepare import preflight

# these tests open and leave blocks themselves, outside the suite's own
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("outside_kept_zygotes")]

CPU = [parse_side("cpu")]


def _zygote_of_a_job() -> tuple[int, Launcher]:
    """A launcher that ran one forked job (the pre-flight of the CPU), still open."""
    launcher = Launcher()
    preflight(CPU, launcher=launcher)
    assert launcher.zygote is not None
    return launcher.zygote.proc.pid, launcher


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_kept_zygote_serves_the_next_launcher_and_ends_with_the_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with keep_zygotes():
        first, launcher = _zygote_of_a_job()
        launcher.close()
        assert _running(first)  # kept, idle
        again, launcher = _zygote_of_a_job()
        launcher.close()
        assert again == first  # the same zygote forked the second job
        monkeypatch.setenv("PYTEST_CURRENT_TEST", "the next test")  # read by no import
        monkeypatch.setenv("PARITY_CACHE_DIR", "/another/cache")  # read where used
        monkeypatch.setenv("PARITY_STORE", "/another/index.sqlite")
        monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/another/inductor")  # set by compiling
        still, launcher = _zygote_of_a_job()
        launcher.close()
        assert still == first
        monkeypatch.setenv("PARITY_TEST_KEPT", "another world")  # what a zygote may read
        other, launcher = _zygote_of_a_job()
        launcher.close()
        assert other != first and _running(first) and _running(other)
    assert not _running(first) and not _running(other)


def test_a_zygote_launched_ahead_and_never_used_is_kept_still_starting() -> None:
    """A comparison refused after its launcher launched the zygote ahead (``warm``) and
    before any worker: the next launcher takes that zygote, ready by then."""
    with keep_zygotes():
        refused = Launcher()
        refused.warm("mlp-train")
        assert refused.pending is not None
        launched = refused.pending[1].pid
        refused.close()  # nothing was forked
        assert _running(launched) and launched in kept.pids()
        taken, launcher = _zygote_of_a_job()
        launcher.close()
        assert taken == launched
    assert not _running(launched)
    outside = Launcher()
    outside.warm("mlp-train")
    assert outside.pending is not None
    launched = outside.pending[1].pid
    outside.close()
    assert not _running(launched)  # outside the block it is stopped, as before


def test_the_block_is_public() -> None:
    import parity

    assert parity.keep_zygotes is keep_zygotes and parity.api.keep_zygotes is keep_zygotes


def test_outside_the_block_a_launcher_ends_its_zygote() -> None:
    pid, launcher = _zygote_of_a_job()
    launcher.close()
    assert not _running(pid)
    with keep_zygotes():
        with keep_zygotes():  # nested: part of the outer block
            inner, launcher = _zygote_of_a_job()
            launcher.close()
        assert _running(inner)
    assert not _running(inner)


class Idle:
    """Stands for a zygote in the bound's bookkeeping (no process: only the count is
    tested here; the tests above use real ones)."""

    alive = True

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_the_zygotes_kept_longest_are_closed_beyond_the_bound() -> None:
    made = [Idle() for _ in range(kept.MOST + 2)]
    with keep_zygotes():
        for i, zygote in enumerate(made):
            assert kept.keep(((), frozenset({("N", str(i))})), zygote)  # type: ignore[arg-type]
        assert [z.closed for z in made] == [True, True] + [False] * kept.MOST
    assert all(z.closed for z in made)


def test_a_block_may_keep_more_and_its_bound_holds_for_the_blocks_inside_it() -> None:
    made = [Idle() for _ in range(kept.MOST + 3)]
    with keep_zygotes(most=kept.MOST + 2), keep_zygotes():  # the inner one is part of it
        for i, zygote in enumerate(made):
            assert kept.keep(((), frozenset({("N", str(i))})), zygote)  # type: ignore[arg-type]
        assert [z.closed for z in made] == [True] + [False] * (kept.MOST + 2)
    assert all(z.closed for z in made)
    with pytest.raises(ValueError, match="at least one"), keep_zygotes(most=0):
        pass


def test_a_zygote_launched_early_serves_the_first_launcher_that_wants_it() -> None:
    """``launch_early``: the zygote the comparison will fork from starts before the command
    reads its request; the first launcher that would start the same one forks from it."""
    kept.launch_early(())
    early = kept._early
    assert early is not None and kept.has(kept.key(()))
    first, launcher = _zygote_of_a_job()
    try:
        assert first == early[1].pid and kept._early is None  # taken, not started again
    finally:
        launcher.close()
    assert not _running(first)  # outside a block the launcher ends it, as its own


def test_an_early_zygote_nobody_wants_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    kept.launch_early(())
    early = kept._early
    assert early is not None
    monkeypatch.setenv("PARITY_TEST_KEPT", "another world")  # the request changed it
    pid, launcher = _zygote_of_a_job()
    launcher.close()
    assert pid != early[1].pid and early[1].poll() is not None and kept._early is None
    kept.launch_early(())  # and at the command's end, one never taken
    left = kept._early
    assert left is not None
    kept._stop_early()
    assert left[1].poll() is not None and kept._early is None


def test_no_early_zygote_where_workers_are_spawned_or_zygotes_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PARITY_LAUNCHER", "spawn")
    kept.launch_early(())
    assert kept._early is None
    monkeypatch.delenv("PARITY_LAUNCHER")
    with keep_zygotes():  # a sweep's cells, a Python session, the test workers
        kept.launch_early(())
        assert kept._early is None
