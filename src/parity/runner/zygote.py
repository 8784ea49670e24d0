"""Fresh worker processes without paying for the imports each time: a zygote that forks.

Starting ``python -m parity.runner.worker`` costs an interpreter and ``import torch`` (seconds
on a small machine) before a worker does anything. The zygote pays that once: it is a
plain ``python -m parity.runner.zygote`` process (isolated from the working directory:
``runner.python``) that imports torch and the worker's
modules, touches no device, and then forks one child per job. Each child is a new
process: a fresh allocator and caches, no device state (none existed to inherit), its
own session (so a timeout stops its whole group), killed with the zygote (Linux
``PR_SET_PDEATHSIG``), its stdout and stderr on the bundle's log files, and it runs the
same ``parity.runner.worker.main`` a spawned worker runs.

The parent talks to the zygote over its stdin and stdout, one JSON object per line:

    parent -> zygote   {"start": TMP_DIR, "stdout": PATH, "stderr": PATH, "env": {...},
                        "entry": MODULE}
    zygote -> parent   {"ready": true}  once, after the imports
                       {"pid": PID}     for each start, in order
                       {"exit": PID, "status": CODE}   when a child ends (-N: signal N)

The zygote is single-threaded (it forks), a child subreaper that kills what a worker
leaves behind (``runner.reaper``), reaps its children itself as soon as they end
(``SIGCHLD`` wakes its ``select``, so the parent hears of an exit at once, not at the next
poll) and, when its stdin closes (the parent ended), kills them and exits. Devices that
cannot be initialised in a forked process, and torchrun jobs, are spawned as before
(``runner.launch`` decides).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from parity.runner.python import module_command
from parity.runner.reaper import hold_subreaper, kill_group, mark, sweep

#: what the zygote imports before it forks: torch, the worker with its session and modes,
#: the built-in workloads and the device adapters (never a plugin or a user's file: user
#: code runs in the children only)
PRELOAD = (
    "torch",
    # what the first optimizer, the FLOP counter and the compile probes import (seconds)
    "torch._dynamo",
    "torch.optim",
    "torch.utils.flop_counter",
    # what every worker's first ``numpy.median`` (its steady-state estimate) imports
    # (else paid again in every fork)
    "numpy.ma",
    "parity.runner.worker",
    "parity.runner.session",
    "parity.runner.modes",
    "parity.workloads.registry",
    "parity.devices.registry",
)
#: the zygote's select timeout, a safety net only (``SIGCHLD`` wakes it when a child ends)
POLL_S = 1.0


# -- the zygote process ----------------------------------------------------------------------


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _child(request: dict[str, object], wakeup: tuple[int, int]) -> None:
    """In the forked child: a session of its own, the logs, then the worker; never returns."""
    code = 70
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wakeup:
            os.close(fd)
        os.setsid()
        _die_with_parent()
        for fd, key in ((1, "stdout"), (2, "stderr")):
            target = os.open(str(request[key]), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(target, fd)
            os.close(target)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        cwd = request.get("cwd")
        if isinstance(cwd, str):  # the requester's, as a process it started would have
            os.chdir(cwd)
        env = request.get("env")
        if isinstance(env, dict):
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in env.items()})
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        import faulthandler

        faulthandler.enable()
        import importlib

        entry = importlib.import_module(str(request.get("entry") or "parity.runner.worker"))
        code = entry.main([str(request["start"])])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # the worker writes its own error report; this is a last resort
        import traceback

        traceback.print_exc()
        code = 71
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _say(message: dict[str, object]) -> None:
    sys.__stdout__.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
    sys.__stdout__.flush()  # type: ignore[union-attr]


def _reap(children: set[int]) -> None:
    """Report each worker that ended, killing what it left in its process group; once
    no worker runs, kill the orphans re-parented here (the zygote is a subreaper)."""
    reaped = False
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        reaped = True
        if pid not in children:  # an orphan a worker left, re-parented here
            continue
        children.discard(pid)
        kill_group(pid)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        _say({"exit": pid, "status": code})
    if reaped and not children:
        sweep(marked_only=False)


def serve() -> None:
    """The zygote's loop: fork on each request, report exits, end with the parent."""
    import importlib

    _die_with_parent()
    hold_subreaper()
    for name in PRELOAD:
        importlib.import_module(name)
    for name in sys.argv[1:]:  # the workload's own (``workloads.names.preload_modules``)
        with contextlib.suppress(ImportError):  # its worker reports that, in its bundle
            importlib.import_module(name)
    from parity.plugins import remember_entry_points
    from parity.probes.packages import installed

    installed()  # cached: the installed packages do not change under a comparison
    remember_entry_points()
    wakeup = os.pipe()
    for fd in wakeup:
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wakeup[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the fd is written
    _say({"ready": True})
    children: set[int] = set()
    stdin = sys.stdin.buffer
    pending = b""
    while True:
        ready, _, _ = select.select([stdin, wakeup[0]], [], [], POLL_S)
        if wakeup[0] in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wakeup[0], 4096)
        _reap(children)
        if stdin not in ready:
            continue
        chunk = os.read(stdin.fileno(), 65536)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _child(request, wakeup)
            children.add(pid)
            _say({"pid": pid})
    for pid in children:
        kill_group(pid)
    sweep(marked_only=False)
    # nothing left to write: skip the interpreter's teardown of torch (about a second the
    # parent would wait for at the end of every comparison)
    os._exit(0)


# -- the parent's side -----------------------------------------------------------------------


class ZygoteError(RuntimeError):
    """The zygote could not be started or stopped answering: spawn instead."""


class Zygote:
    """The parent's handle on a zygote: start children, learn their exit status."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lock = threading.Lock()
        self.pids: list[int] = []
        self.exits: dict[int, int] = {}
        self.changed = threading.Condition(self.lock)
        #: one start at a time: replies come in order, so a start waits for its own
        self.forking = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True, name="parity-zygote")
        self.reader.start()

    @classmethod
    def start(cls, *, preload: tuple[str, ...] = (), timeout_s: float = 120.0) -> Zygote:
        """A zygote that imported ``PRELOAD`` and ``preload`` (a module that fails to
        import is left to the workers)."""
        return cls.ready(cls.launch(preload=preload), timeout_s=timeout_s)

    @staticmethod
    def launch(*, preload: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
        """The zygote's process, importing while the caller goes on (``ready`` waits)."""
        return subprocess.Popen(
            module_command("parity.runner.zygote", *preload),
            env=mark(dict(os.environ)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    @classmethod
    def ready(cls, proc: subprocess.Popen[bytes], *, timeout_s: float = 120.0) -> Zygote:
        """The handle on a launched zygote once it says it is ready."""
        assert proc.stdout is not None
        ready = _read_line(proc.stdout, timeout_s)
        if ready != {"ready": True}:
            proc.kill()
            raise ZygoteError(f"the zygote did not start (said {ready!r})")
        return cls(proc)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            message = json.loads(raw)
            with self.changed:
                if "pid" in message:
                    self.pids.append(int(message["pid"]))
                elif "exit" in message:
                    self.exits[int(message["exit"])] = int(message["status"])
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(
        self,
        tmp: Path,
        stdout: Path,
        stderr: Path,
        env: dict[str, str],
        entry: str = "parity.runner.worker",
    ) -> int:
        """Start ``entry.main([tmp])`` (the worker) in a forked child; its pid (it leads its
        own session). The child runs in this process's working directory, not the one the
        zygote was launched from (a kept zygote outlives the directory of the command that
        launched it, and workload files and data are named relative to the caller's)."""
        try:
            cwd: str | None = os.getcwd()
        except FileNotFoundError:  # removed under us: the child stays where the zygote is
            cwd = None
        request = {
            "cwd": cwd,
            "start": str(tmp),
            "stdout": str(stdout),
            "stderr": str(stderr),
            "env": env,
            "entry": entry,
        }
        assert self.proc.stdin is not None
        with self.forking, self.changed:
            known = len(self.pids)
            try:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise ZygoteError(f"the zygote is gone: {exc}") from exc
            if not self.changed.wait_for(lambda: len(self.pids) > known or not self.alive, 30):
                raise ZygoteError("the zygote did not answer a start within 30 s")
            if len(self.pids) <= known:
                raise ZygoteError("the zygote ended")
            return self.pids[known]

    def poll(self, pid: int) -> int | None:
        """The child's exit status (-N: killed by signal N), or None while it runs."""
        with self.lock:
            if pid in self.exits:
                return self.exits[pid]
        if not self.alive:  # children die with the zygote
            return -signal.SIGKILL
        return None

    def wait(self, pid: int, timeout_s: float) -> int | None:
        """The child's exit status once it ends, or None after ``timeout_s``; woken by the
        zygote's message, not by polling."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while pid not in self.exits and self.proc.poll() is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(min(left, 1.0))  # 1 s: the zygote itself may die
        return self.poll(pid)

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def stop_launched(proc: subprocess.Popen[bytes]) -> None:
    """A zygote that was launched and is not wanted: killed, reaped, its pipes closed."""
    proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _read_line(stream: IO[bytes], timeout_s: float) -> object:
    ready, _, _ = select.select([stream], [], [], timeout_s)
    if not ready:
        return None
    line = stream.readline()
    try:
        return json.loads(line) if line else None
    except ValueError:
        return None


if __name__ == "__main__":
    serve()
