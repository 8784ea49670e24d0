"""What a workload leaves running is stopped when its side ends: no orphan outlives parity.

A workload may fork a child (a data server, a ``multiprocessing`` pool it never closes)
or a grandchild that calls ``setsid`` to leave its process group. Two mechanisms catch
them:

- each worker leads its own process group (the zygote's children call ``setsid``,
  spawned workers start in a new session); when a worker ends, what is left in its group
  is killed (``kill_group``);
- the processes that start workers (the zygote, and parity itself for spawned workers)
  are child subreapers (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``, through ctypes; a no-op
  elsewhere): a process whose parent ended is re-parented to them instead of to init, so
  they see it and can kill and reap it (``sweep``). parity only sweeps processes that
  carry its mark (``OWNER``, set in the environment of every worker and zygote it
  starts), so a program that calls ``parity.compare`` keeps its own children.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

#: ``prctl`` option that makes this process the reaper of its orphaned descendants
PR_SET_CHILD_SUBREAPER = 36
#: the environment variable that marks a process (and what it starts) as parity's
OWNER = "_PARITY_OWNER"  # not PARITY_: the manifest records those

_lock = threading.Lock()
_users = 0


def _prctl_subreaper(on: bool) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def hold_subreaper() -> bool:
    """Make this process a child subreaper (counted: ``release_subreaper`` undoes the
    last hold). False where the platform has none."""
    global _users
    with _lock:
        _users += 1
        return _prctl_subreaper(True) if _users == 1 else True


def release_subreaper() -> None:
    global _users
    with _lock:
        _users = max(0, _users - 1)
        if _users == 0:
            _prctl_subreaper(False)


def mark(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this process's mark, for a worker or zygote it starts."""
    return {**env, OWNER: str(os.getpid())}


def kill_group(pgid: int) -> None:
    """SIGKILL whatever is left in process group ``pgid`` (a worker that ended)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pgid, signal.SIGKILL)


def children(pid: int | None = None) -> list[int]:
    """The live children of ``pid`` (this process), from ``/proc``; [] elsewhere."""
    pid = os.getpid() if pid is None else pid
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError, ValueError):
            found.update(int(x) for x in task.read_text().split())
    return sorted(found)


def _marked(pid: int, owner: int) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{OWNER}={owner}".encode() in environ.split(b"\0")


def sweep(keep: Iterable[int] = (), *, marked_only: bool = True) -> list[int]:
    """Kill and reap this process's children that are not in ``keep`` (with their
    process groups): the orphans a worker left, re-parented here. ``marked_only``: only
    those carrying this process's mark. Returns the pids killed."""
    me, spared = os.getpid(), set(keep)
    killed = []
    for pid in children(me):
        if pid in spared or (marked_only and not _marked(pid, me)):
            continue
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group != os.getpgid(0):
                kill_group(group)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)
        killed.append(pid)
    return killed
