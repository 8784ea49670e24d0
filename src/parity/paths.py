"""Where parity writes: output paths checked before anything runs, and the lock that keeps
a second writer out of a comparison directory.

``check_writable`` refuses, in one line and before a worker starts, an output path that
could never be written: a name that is not UTF-8 (bytes an undecodable argument carried),
one longer than the system allows, a path under a file, an existing directory where a
file goes (or a FIFO, a device), or a place where nothing can be made (a read-only
mount, ``/proc``, a directory without permission). The last is found by making and
removing an empty hidden directory in the nearest existing parent, so the check holds as
``root`` too, where permissions alone say nothing.

``locked`` holds an exclusive ``flock`` on ``DIR/.parity.lock`` while a comparison
writes ``DIR`` (a new comparison, ``--resume``); a second writer is refused at once,
naming the process that holds it. The lock is re-entrant within a process, and the file
goes when the last holder leaves (checked by inode, so a writer that opened the file
just before it was removed never holds a lock on a file nobody else sees).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from parity.errors import OptionError

LOCK_FILE = ".parity.lock"
#: the longest path and the longest name in it the kernel takes (Linux's, where unknown)
PATH_MAX = 4096
NAME_MAX = 255


def _limit(path: str, name: str, default: int) -> int:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return int(os.pathconf(path, name))
    return default


def check_writable(
    path: str | os.PathLike[str], option: str, *, kind: Literal["directory", "file"]
) -> None:
    """``path`` can be made (or written over) as a ``kind``, else an OptionError naming
    ``option``; nothing is left behind."""
    text = os.fspath(path)
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise OptionError(
            f"{option} {text!r} holds bytes that are not UTF-8: choose a name in UTF-8"
        ) from None
    absolute = Path(os.path.abspath(text))
    longest = _limit("/", "PC_PATH_MAX", PATH_MAX)
    if len(os.fsencode(absolute)) >= longest:
        raise OptionError(
            f"{option} is {len(raw)} bytes long, beyond the system's limit of {longest}: "
            "choose a shorter path"
        )
    for part in absolute.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise OptionError(
                f"{option} has a name of {len(os.fsencode(part))} bytes, beyond the "
                f"limit of {NAME_MAX}: choose a shorter name"
            )
    _check_existing(absolute, option, kind)
    parent = absolute.parent
    while not os.path.lexists(parent):
        parent = parent.parent
    if not parent.is_dir():
        raise OptionError(f"{option} {text} is under {parent}, which is a file: choose a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".parity-probe-", dir=parent))
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise OptionError(
            f"{option} {text} cannot be written ({why} in {parent}): choose a writable place"
        ) from None


def _check_existing(path: Path, option: str, kind: str) -> None:
    try:
        exists = path.exists()
    except OSError as exc:
        raise OptionError(
            f"{option} {path} cannot be used ({exc.strerror}): choose another"
        ) from None
    if not exists:
        return
    if kind == "file" and not path.is_file():
        raise OptionError(
            f"{option} {path} exists and is not a regular file (a directory, a FIFO, a "
            "device): choose a file name"
        )
    if kind == "directory" and not path.is_dir():
        raise OptionError(f"{option} {path} is a file, not a directory: choose a new --out")


# -- the lock on a comparison directory ------------------------------------------------------

_HELD: dict[str, tuple[int, int]] = {}  # realpath -> (fd, depth)
_GUARD = threading.Lock()


def holder(directory: Path) -> str:
    """Who holds ``directory``'s lock, as its lock file says (``pid N on HOST``)."""
    try:
        return (directory / LOCK_FILE).read_text(encoding="utf-8").strip() or "another process"
    except (OSError, UnicodeDecodeError):
        return "another process"


def _acquire(directory: Path) -> int:
    import fcntl

    path = directory / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise OptionError(
                f"{directory} is locked by parity {holder(directory)}, which is writing it: "
                "wait for it to end (or pass another --out)"
            ) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:  # not a file its last holder removed meanwhile
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
            return fd
        os.close(fd)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold ``directory``'s lock (see the module's docstring); OptionError if another
    process holds it."""
    key = os.path.realpath(directory)
    with _GUARD:
        fd, depth = _HELD.get(key, (-1, 0))
        if depth == 0:
            fd = _acquire(Path(key))
        _HELD[key] = (fd, depth + 1)
    try:
        yield
    finally:
        with _GUARD:
            fd, depth = _HELD.pop(key)
            if depth > 1:
                _HELD[key] = (fd, depth - 1)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(Path(key) / LOCK_FILE)
                os.close(fd)
