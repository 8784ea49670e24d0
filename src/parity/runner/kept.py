"""Zygotes kept between launchers, where a caller asks for it (``keep_zygotes``).

A ``Launcher`` closes its zygote when it closes: one command, one comparison. A caller
that runs many comparisons in one process (``parity sweep``'s cells, a Python session)
can keep the zygote instead, inside ``with keep_zygotes():``, so that its ``import
torch`` is paid once. A kept zygote is reused only by a launcher that would start the same
one: the same preloaded modules and the same environment, byte for byte (what a zygote
imported may depend on any variable, ``OMP_NUM_THREADS`` or ``PARITY_PLUGINS``). Each
worker is still a fresh fork of it, as before. Leaving the block closes every kept zygote.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from parity.runner.zygote import Zygote

Key = tuple[tuple[str, ...], frozenset[tuple[str, str]]]

#: variables that change while a process runs and that nothing a zygote imports reads:
#: pytest names the running test in one
IGNORED = frozenset({"PYTEST_CURRENT_TEST"})

#: at most this many idle zygotes are kept (one per preload and environment)
MOST = 3

_lock = threading.Lock()
#: None outside ``keep_zygotes``; inside, the idle zygotes by what they were started with
_kept: dict[Key, Zygote] | None = None


def key(preload: tuple[str, ...]) -> Key:
    """What a zygote started now with ``preload`` would be."""
    return preload, frozenset((k, v) for k, v in os.environ.items() if k not in IGNORED)


@contextlib.contextmanager
def keep_zygotes() -> Iterator[None]:
    """Launchers closed inside leave their zygotes for the next ones; all closed on leaving
    (a nested block is part of the outer one)."""
    global _kept
    with _lock:
        outer = _kept is None
        if outer:
            _kept = {}
    try:
        yield
    finally:
        if outer:
            with _lock:
                left, _kept = _kept or {}, None
            for zygote in left.values():
                zygote.close()


def take(wanted: Key) -> Zygote | None:
    """A kept zygote started like ``wanted`` and still alive (it is no longer kept)."""
    with _lock:
        zygote = _kept.pop(wanted, None) if _kept is not None else None
    if zygote is not None and not zygote.alive:
        zygote.close()
        return None
    return zygote


def has(wanted: Key) -> bool:
    with _lock:
        return _kept is not None and wanted in _kept


def keep(started: Key, zygote: Zygote) -> bool:
    """Keep an idle zygote for the next launcher; False outside ``keep_zygotes`` (or one
    like it is kept already, or it died): the caller closes it. Beyond ``MOST`` kept,
    the one kept longest is closed (each holds torch in memory)."""
    with _lock:
        if _kept is None or started in _kept or not zygote.alive:
            return False
        _kept[started] = zygote
        evicted = [_kept.pop(k) for k in list(_kept)[: max(0, len(_kept) - MOST)]]
    for old in evicted:
        old.close()
    return True


def pids() -> set[int]:
    """The kept zygotes' processes, which no launcher's clean-up may kill."""
    with _lock:
        return {z.proc.pid for z in (_kept or {}).values()}
