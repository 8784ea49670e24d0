"""One rule for what parity leaves on this machine: nothing it did not mean to keep.

Every local staging or fetched copy (a comparison staged before it is published to
``--out s3://...``, a tree fetched from a URL for ``diff`` or ``report``, a pre-flight's
or a preparation's job directory) is made here, in ``$TMPDIR``, named
``parity-KIND-PID-*``, and removed on every exit path:

- when the code that made it is done with it (``remove``, or ``scope`` for all those made
  inside a block);
- at the process's exit (``atexit``: ``parity.exiting.leave`` runs it), and on ``SIGTERM``
  or ``SIGHUP``, whose default would end the process with none of that;
- after a ``SIGKILL``, which nothing survives: the next parity process on this machine
  removes the directories of processes that no longer exist (``sweep``).

Where ``$TMPDIR`` cannot take a directory (full, read-only, missing) the error is one line
naming it and the fix, before anything is written or uploaded.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from parity.errors import OutputError

_NAME = re.compile(r"^parity-[a-z]+-(\d+)-")
_lock = threading.Lock()
_made: dict[Path, int] = {}  # directory -> the pid that made it
_installed: list[int] = []  # the pid whose exit handlers are installed


def make(kind: str) -> Path:
    """A new, empty directory ``$TMPDIR/parity-KIND-PID-*``, removed at the latest when
    this process ends; OutputError (one line) where ``$TMPDIR`` cannot take it."""
    _install()
    try:
        path = Path(tempfile.mkdtemp(prefix=f"parity-{kind}-{os.getpid()}-"))
    except OSError as exc:
        raise OutputError(
            f"cannot make a scratch directory in {tempfile.gettempdir()} ({exc.strerror or exc})"
            ": free space there or set TMPDIR to a writable place with room"
        ) from None
    with _lock:
        _made[path] = os.getpid()
    return path


def remove(path: Path) -> None:
    """Remove a directory ``make`` made (and forget it)."""
    with _lock:
        _made.pop(path, None)
    shutil.rmtree(path, ignore_errors=True)


def remove_all() -> None:
    """Remove every directory this process made and still holds."""
    with _lock:
        mine = [p for p, pid in _made.items() if pid == os.getpid()]
    for path in mine:
        remove(path)


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """Remove, on leaving, every directory made inside (whatever ends the block)."""
    with _lock:
        before = set(_made)
    try:
        yield
    finally:
        with _lock:
            made = [p for p in _made if p not in before]
        for path in made:
            remove(path)


def held() -> list[Path]:
    """The directories this process made and has not removed (for tests)."""
    with _lock:
        return sorted(p for p, pid in _made.items() if pid == os.getpid())


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the scratch directories of parity processes that no longer exist (killed
    with ``SIGKILL``); the directories removed."""
    root = root or Path(tempfile.gettempdir())
    gone: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            m = _NAME.match(entry.name)
            if not m or not entry.is_dir(follow_symlinks=False) or _alive(int(m.group(1))):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                    continue
            shutil.rmtree(entry.path, ignore_errors=True)
            gone.append(Path(entry.path))
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: not ours to judge
    return True


def _install() -> None:
    """Once per process: the exit handlers, and a sweep of dead processes' leftovers."""
    import atexit

    with _lock:
        if _installed and _installed[0] == os.getpid():
            return
        _installed[:] = [os.getpid()]
    atexit.register(remove_all)
    sweep()
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                signal.signal(signum, _on_signal)


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    """Remove this process's scratch directories, then end as the signal would have."""
    remove_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
