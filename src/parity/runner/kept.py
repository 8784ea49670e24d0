"""Zygotes kept between launchers, where a caller asks for it (``keep_zygotes``).

A ``Launcher`` closes its zygote when it closes: one command, one comparison. A caller
that runs many comparisons in one process (``parity sweep``'s cells, a Python session)
can keep the zygote instead, inside ``with keep_zygotes():``, so that its ``import
torch`` is paid once. A kept zygote is reused only by a launcher that would start the same
one: the same preloaded modules and the same environment, byte for byte but for the few
variables that no import reads (``IGNORED``): what a zygote imported may depend on any
other, ``OMP_NUM_THREADS`` or ``PARITY_PLUGINS``. Each
worker is still a fresh fork of it, as before. Leaving the block closes every kept zygote.

A zygote launched ahead of a comparison that then never ran one (its side refused before
any worker started) is kept as it is, still importing: the next launcher that takes it
waits for it to be ready, so no launcher pays for a zygote another one threw away.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator

from parity.runner.zygote import Zygote, ZygoteError, stop_launched

Key = tuple[tuple[str, ...], frozenset[tuple[str, str]]]
#: a ready zygote, or one launched (``Zygote.launch``) that no launcher waited for
Idle = Zygote | subprocess.Popen[bytes]

#: variables that no import reads, so a zygote serves launchers that differ in them (each
#: fork still runs in its launcher's whole environment): pytest's name of the running
#: test, parity's own cache and index (read where they are used, never at import: one
#: per test, or per cell of a sweep, would otherwise start a zygote each), the
#: terminal's size, and Inductor's cache directory, which torch reads when it compiles
#: and writes into the environment the first time it looks it up (``torch._inductor.
#: runtime.cache_dir_utils.cache_dir``): once a process had compiled, every zygote it
#: kept from before was taken for another one
IGNORED = frozenset(
    {
        "PYTEST_CURRENT_TEST",
        "PARITY_CACHE_DIR",
        "PARITY_STORE",
        "COLUMNS",
        "LINES",
        "TORCHINDUCTOR_CACHE_DIR",
    }
)

#: at most this many idle zygotes are kept (one per preload and environment), unless the
#: block says otherwise (``keep_zygotes(most=...)``)
MOST = 3

_lock = threading.Lock()
#: None outside ``keep_zygotes``; inside, the idle zygotes by what they were started with
_kept: dict[Key, Idle] | None = None
#: the bound of the outermost block (read only while ``_kept`` is not None: that block set it)
_most = MOST
#: a zygote launched at a command's start, before its request was read (``launch_early``)
_early: tuple[Key, subprocess.Popen[bytes]] | None = None


def key(preload: tuple[str, ...]) -> Key:
    """What a zygote started now with ``preload`` would be."""
    return preload, frozenset((k, v) for k, v in os.environ.items() if k not in IGNORED)


@contextlib.contextmanager
def keep_zygotes(most: int = MOST) -> Iterator[None]:
    """Launchers closed inside leave their zygotes for the next ones, at most ``most`` of
    them (each holds torch in memory); all closed on leaving. A nested block
    is part of the outer one, whose bound holds."""
    global _kept, _most
    if most < 1:
        raise ValueError(f"keep_zygotes(most={most}): keep at least one zygote")
    with _lock:
        outer = _kept is None
        if outer:
            _kept, _most = {}, most
    try:
        yield
    finally:
        if outer:
            with _lock:
                left, _kept = _kept or {}, None
            for idle in left.values():
                _close(idle)


def _close(idle: Idle) -> None:
    if isinstance(idle, subprocess.Popen):
        stop_launched(idle)
    else:
        idle.close()


def launch_early(preload: tuple[str, ...]) -> None:
    """Launch the zygote a command's comparison will fork from before the command reads
    its request, where reading it imports torch in this process too (the default target
    asks torch for an accelerator): the two imports then run side by side instead of one
    after the other. The first launcher that wants a zygote started like it takes it
    (``take``); one that wants another stops it; otherwise it is stopped at exit (and
    dies with this process in any case: ``Zygote.launch``). Not where workers are spawned
    (``PARITY_LAUNCHER=spawn``), nor inside ``keep_zygotes``, whose kept zygotes serve
    its comparisons (a command refused after an early launch would leave one importing
    torch beside the next comparison for nothing)."""
    global _early
    if os.environ.get("PARITY_LAUNCHER", "fork") == "spawn":
        return
    wanted = key(preload)
    with _lock:
        if _early is not None or _kept is not None:
            return
        _early = (wanted, Zygote.launch(preload=preload))


def _stop_early() -> None:
    """The early zygote, where nobody took it, stopped (at exit: a refused command's)."""
    global _early
    with _lock:
        early, _early = _early, None
    if early is not None:
        stop_launched(early[1])


atexit.register(_stop_early)


def take(wanted: Key) -> Zygote | None:
    """A kept zygote started like ``wanted`` and still alive (it is no longer kept), or
    the one launched early where it was started like it (one that was not is stopped:
    the command wanted another)."""
    global _early
    with _lock:
        idle: Idle | None = _kept.pop(wanted, None) if _kept is not None else None
        early, _early = _early, None
    if early is not None:
        if idle is None and early[0] == wanted:
            idle = early[1]
        else:
            stop_launched(early[1])
    if isinstance(idle, subprocess.Popen):
        try:
            return Zygote.ready(idle)  # launched ahead by a launcher that never used it
        except ZygoteError:
            stop_launched(idle)
            return None
    if idle is not None and not idle.alive:
        idle.close()
        return None
    return idle


def has(wanted: Key) -> bool:
    """A zygote started like ``wanted`` is kept or was launched early."""
    with _lock:
        return (_kept is not None and wanted in _kept) or (
            _early is not None and _early[0] == wanted
        )


def keep(started: Key, zygote: Idle) -> bool:
    """Keep an idle zygote (or one launched and not waited for) for the next launcher;
    False outside ``keep_zygotes`` (or one like it is kept already, or it died): the
    caller closes it. Beyond the block's bound (``MOST`` unless it said), the one used
    longest ago is closed (each holds torch in memory)."""
    alive = zygote.poll() is None if isinstance(zygote, subprocess.Popen) else zygote.alive
    with _lock:
        if _kept is None or started in _kept or not alive:
            return False
        _kept[started] = zygote
        evicted = [_kept.pop(k) for k in list(_kept)[: max(0, len(_kept) - _most)]]
    for old in evicted:
        _close(old)
    return True


def offer(started: Key | None, idle: Idle) -> None:
    """Keep ``idle`` for the next launcher where it can be (``keep``), else close it
    (``started`` None: a zygote whose key nobody knows is never kept)."""
    if started is None or not keep(started, idle):
        _close(idle)


def pids() -> set[int]:
    """The kept zygotes' processes (and the early one), which no launcher's clean-up may
    kill."""
    with _lock:
        early = {_early[1].pid} if _early is not None else set()
        return early | {
            z.pid if isinstance(z, subprocess.Popen) else z.proc.pid for z in (_kept or {}).values()
        }
