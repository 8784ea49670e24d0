"""Launching a side: a fresh process per run, a timeout, and a bundle either way.

Each run is a new process in its own session (so that a timeout can stop the whole
process group), with its stdout and stderr relayed, redacted, into the bundle's log files
(``runner.logs``), so even a segfault's last words are kept. The parent never touches a
device. A ``Launcher`` starts it one of two ways, and the manifest records which:

- ``fork``: forked from a zygote (``runner.zygote``) that imported torch and the worker
  once and touched no device, so a repeat does not pay for an interpreter and ``import
  torch`` again; for one-process sides on devices that may be initialised in a forked
  process (the CPU, CUDA: safe while the parent never initialised it);
- ``spawn``: a new ``python -m parity.runner.worker`` (isolated: ``runner.python``;
  nothing inherited but the environment): torchrun sides, devices whose adapter is not
  ``fork_safe`` (TorchNeuron, XLA, a plugin device that does not declare itself safe),
  or when the zygote cannot start.
  ``PARITY_LAUNCHER=spawn`` forces it.

Whatever happens to the worker, the side ends as a bundle under its final name: ``ok``
as the worker wrote it, or ``failed`` with the reason (the worker's exception, the signal
that killed it, or the timeout: ``runner.failure``) and the tail of its stderr, both
redacted. The one
exception is an I/O error while the bundle is written (the disk is full), in the worker
or here: then nothing goes under the final name, the partial bundle stays hidden (with
its logs redacted and a failed manifest where space allows) for ``--resume`` to remove
and run again, and ``run_job`` raises an ``OutputError`` with the reason.

The worker's stdout and stderr reach the bundle's logs redacted as they are written
(``runner.logs``), and a script job's ``job.json`` holds its arguments with the values of
secret-looking flags masked from the start (the worker gets the real ones in its
environment), so a kill at any moment leaves no secret in the hidden temporary bundle.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal, Protocol

from parity.bundle import (
    PARTIAL,
    finalize,
    io_reason,
    temp_dir_for,
    write_doc,
)
from parity.cache import CACHE_ENV
from parity.devices.names import forks
from parity.errors import OutputError
from parity.model.bundle import Bundle
from parity.model.codec import decode, loads
from parity.model.job import EVENTS_FILE, JOB_FILE, Event, Job, ScriptPlan
from parity.runner import kept
from parity.runner.ahead import import_ahead
from parity.runner.cpu import process_cpu_s
from parity.runner.failure import failure_reason, write_failed
from parity.runner.logs import LOGS, LogRelay
from parity.runner.python import module_command
from parity.runner.reaper import hold_subreaper, kill_group, mark, release_subreaper, sweep
from parity.runner.worker import SCRIPT_ARGS_ENV, job_redactor
from parity.runner.zygote import Zygote, ZygoteError
from parity.workloads.names import preload_modules

EventHandler = Callable[[Event], None]
#: how often a running worker's events are relayed (its end is noticed at once)
POLL_S = 0.1


class EventTail:
    """Reads new complete lines of a worker's ``events.jsonl``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def poll(self) -> list[Event]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        out = []
        for line in chunk[: end + 1].splitlines():
            with contextlib.suppress(ValueError, UnicodeDecodeError):  # a torn or odd line
                out.append(decode(Event, loads(line.decode())))
        return out


class Worker(Protocol):
    """A started worker: ``poll`` gives its exit status (-N: signal N) once it ended,
    ``wait`` the same as soon as it ends within ``timeout_s``."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self, timeout_s: float) -> int | None: ...

    def stop(self) -> int: ...


class Spawned:
    """A worker started as a new interpreter."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.pid = proc, proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> int:
        """SIGTERM the worker's process group, then SIGKILL what is left."""
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
            try:
                return self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        return self.proc.wait()


class Forked:
    """A worker forked by the zygote (it reaps it and reports the exit status)."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid

    def poll(self) -> int | None:
        return self.zygote.poll(self.pid)

    def wait(self, timeout_s: float) -> int | None:
        return self.zygote.wait(self.pid, timeout_s)

    def stop(self) -> int:
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
            status = self.zygote.wait(self.pid, wait)
            if status is not None:
                return status
        return -signal.SIGKILL


class Launcher:
    """Starts workers, forked from one zygote where the job allows it, else spawned.

    The zygote starts with the first job that can use it and ends with ``close()``."""

    def __init__(self, *, fork: bool | None = None) -> None:
        if fork is None:
            fork = os.environ.get("PARITY_LAUNCHER", "fork") != "spawn"
        self.fork = fork
        self.zygote: Zygote | None = None
        #: what the zygote was started with (``runner.kept``: a kept one is reused)
        self.zygote_key: kept.Key | None = None
        #: a zygote launched ahead (``warm``), the modules it preloads and its key
        self.pending: tuple[tuple[str, ...], subprocess.Popen[bytes], kept.Key] | None = None
        self.broken: str | None = None
        self.lock = threading.Lock()  # parts run from threads share one zygote
        #: spawned workers still running (a sweep spares them) and whether this launcher
        #: made the process a subreaper (``runner.reaper``)
        self.running: set[int] = set()
        self.reaping = False

    def how(self, job: Job) -> Literal["fork", "spawn"]:
        """``fork`` or ``spawn`` for this job."""
        one_process = (job.side.nproc or 1) <= 1 and job.torchrun.nnodes <= 1
        if self.fork and self.broken is None and one_process and forks(job.side.device):
            return "fork"
        return "spawn"

    def prepare(self, job: Job) -> Literal["fork", "spawn"]:
        """How the job will start, with the zygote running where it forks (its start is
        the comparison's set-up, not a repeat's start-up)."""
        import_ahead()  # the parent reads the job's bundle next: its reader, meanwhile
        how = self.how(job)
        with self.lock:
            if how == "fork" and (self.zygote is None or not self.zygote.alive):
                if self.zygote is not None:
                    self.zygote.close()
                try:
                    name = job.workload.name if job.workload is not None else ""
                    self.zygote, self.zygote_key = self._zygote(preload_modules(name))
                except ZygoteError as exc:  # spawn from now on
                    self.broken = str(exc)
                    return "spawn"
        return how

    def warm(self, workload: str) -> None:
        """Launch the zygote for ``workload`` now, without waiting: it imports torch while
        this process reads its own inputs (``prepare`` takes it when it is ready)."""
        with self.lock:
            if self.fork and self.broken is None and self.zygote is None and not self.pending:
                preload = preload_modules(workload)
                wanted = kept.key(preload)
                if not kept.has(wanted):  # else the kept one is taken
                    self.pending = (preload, Zygote.launch(preload=preload), wanted)

    def _zygote(self, preload: tuple[str, ...]) -> tuple[Zygote, kept.Key]:
        """A zygote for ``preload`` and the key it was started with: a kept one, else
        the one launched ahead, else a new one. One launched ahead and not used is kept
        where that is on (``runner.kept``), else stopped."""
        wanted = kept.key(preload)
        pending, self.pending = self.pending, None
        reused = kept.take(wanted)
        if pending is not None:
            if reused is None and pending[0] == preload and pending[1].poll() is None:
                return Zygote.ready(pending[1]), pending[2]
            kept.offer(pending[2], pending[1])  # a dead one is stopped, never kept
        return (reused if reused is not None else Zygote.start(preload=preload)), wanted

    def start(self, job: Job, tmp: Path, env: dict[str, str], logs: LogRelay) -> Worker:
        """The job's worker, its stdout and stderr into ``logs`` (redacted there)."""
        with self.lock:
            if not self.reaping:  # orphans of workers (or of a zygote that died) come here
                hold_subreaper()
                self.reaping = True
        if job.launch == "fork" and self.zygote is not None:
            try:
                return Forked(self.zygote, self.zygote.fork(tmp, *logs.paths, env))
            except ZygoteError as exc:  # spawn from now on
                self.broken = str(exc)
                raise
        stdout, stderr = logs.fds
        proc = subprocess.Popen(
            command(job, tmp),
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        with self.lock:
            self.running.add(proc.pid)
        return Spawned(proc)

    def ended(self, worker: Worker) -> None:
        """A worker ended: kill what it left in its process group and, for a spawned one,
        the orphans of parity's workers re-parented to this process (the zygote sweeps
        its own)."""
        kill_group(worker.pid)
        if isinstance(worker, Spawned):
            with self.lock:
                self.running.discard(worker.pid)
                self._sweep()

    def _sweep(self) -> None:
        keep = set(self.running) | kept.pids()
        for proc in (self.zygote.proc if self.zygote else None, *self._pending_procs()):
            if proc is not None:
                keep.add(proc.pid)
        sweep(keep)

    def _pending_procs(self) -> tuple[subprocess.Popen[bytes], ...]:
        return (self.pending[1],) if self.pending is not None else ()

    def run(self, job: Job, path: Path, on_event: EventHandler | None = None) -> Bundle:
        """The job in a worker process of this machine (``run_job``)."""
        return run_job(job, path, on_event=on_event, launcher=self)

    def cpu_s(self) -> float:
        """CPU seconds of the zygote and the workers it forked and reaped (spawned workers
        count in this process's ``RUSAGE_CHILDREN``)."""
        zygote = self.zygote
        return process_cpu_s(zygote.proc.pid) if zygote is not None and zygote.alive else 0.0

    def close(self) -> None:
        if self.zygote is not None:
            started, self.zygote_key = self.zygote_key, None
            kept.offer(started, self.zygote)
            self.zygote = None
        if self.pending is not None:  # launched ahead and never used: kept, still starting
            kept.offer(self.pending[2], self.pending[1])
            self.pending = None
        with self.lock:
            self._sweep()  # what the zygote's or a spawned worker's children left here
            if self.reaping:
                release_subreaper()
                self.reaping = False

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_job(
    job: Job,
    final: Path,
    *,
    on_event: EventHandler | None = None,
    env: dict[str, str] | None = None,
    launcher: Launcher | None = None,
) -> Bundle:
    """Run one side in a fresh process and leave a complete bundle at ``final``; returns
    it as sealed (each file read and hashed once, never read back).

    The worker is stopped after ``job.timeout_s``; ``on_event`` sees each event the
    worker announces (phases, progress, checkpoints) as it happens. Without a
    ``launcher`` the worker is spawned. An I/O error while the bundle is written is an
    ``OutputError`` and leaves nothing at ``final`` (see the module's docstring)."""
    launcher = launcher or Launcher(fork=False)
    # the worker runs the workload, which may change its working directory: every path
    # it is given is absolute
    final = Path(os.path.abspath(final))
    try:
        tmp = temp_dir_for(final)
    except OSError as exc:
        raise OutputError(f"could not make the bundle {final}: {io_reason(exc)}") from exc
    try:
        return _run(job, final, tmp, launcher, on_event, env)
    except OutputError as exc:
        _salvage(tmp, job, str(exc))
        raise
    except OSError as exc:
        reason = f"could not write the bundle {final}: {io_reason(exc)}"
        _salvage(tmp, job, reason)
        raise OutputError(reason) from exc


def _run(
    job: Job,
    final: Path,
    tmp: Path,
    launcher: Launcher,
    on_event: EventHandler | None,
    env: dict[str, str] | None,
) -> Bundle:
    child_env = mark({**os.environ, **(env or {}), **script_env(job), "PYTHONUNBUFFERED": "1"})
    if child_env.get(CACHE_ENV):
        child_env[CACHE_ENV] = os.path.abspath(child_env[CACHE_ENV])
    job = replace(job, launch=launcher.prepare(job), spawned_ns=time.perf_counter_ns())
    write_doc(tmp / JOB_FILE, recorded_job(job))
    with LogRelay(tmp, job_redactor(job)) as logs:
        try:
            worker = launcher.start(job, tmp, child_env, logs)
        except ZygoteError:
            job = replace(job, launch="spawn", spawned_ns=time.perf_counter_ns())
            write_doc(tmp / JOB_FILE, recorded_job(job))
            worker = launcher.start(job, tmp, child_env, logs)
        try:
            rc, timed_out, last_phase = _watch(worker, EventTail(tmp / EVENTS_FILE), job, on_event)
        finally:
            launcher.ended(worker)
    if logs.error is not None:  # the worker's output could not all be kept (a full disk)
        name, exc = logs.error
        full = "the disk is full: " if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        raise OutputError(
            f"could not write the bundle's {name} in {final.parent}: {full}{io_reason(exc)}"
        )
    reason, unwritable = failure_reason(tmp, rc, timed_out, job.timeout_s, last_phase)
    if unwritable:
        raise OutputError(job_redactor(job).text(reason or "the worker could not write its bundle"))
    if reason is not None:
        write_failed(tmp, job, reason)
    return finalize(tmp, final, redactor=job_redactor(job))


def recorded_job(job: Job) -> Job:
    """The job as a bundle keeps it, from its first byte: a script's arguments with secret
    values masked (the worker gets the real ones in its environment: ``script_env``)."""
    if not isinstance(job.plan, ScriptPlan):
        return job
    return replace(job, plan=replace(job.plan, args=job_redactor(job).argv(job.plan.args)))


def script_env(job: Job) -> dict[str, str]:
    """What the worker's environment carries that no file may: a script's real arguments
    (the worker takes them out of its environment before the script runs)."""
    if not isinstance(job.plan, ScriptPlan):
        return {}
    return {SCRIPT_ARGS_ENV: json.dumps(list(job.plan.args))}


def _salvage(tmp: Path, job: Job, reason: str) -> None:
    """After an I/O error: the partial bundle stays hidden, its figures dropped to make
    room, its logs redacted, and a failed manifest where space allows."""
    for name in PARTIAL:
        with contextlib.suppress(OSError):
            (tmp / name).unlink(missing_ok=True)
    for log in LOGS:
        job_redactor(job).file(tmp / log)
    with contextlib.suppress(OSError, OutputError):
        write_failed(tmp, job, reason)


def _watch(
    worker: Worker, tail: EventTail, job: Job, on_event: EventHandler | None
) -> tuple[int, bool, str]:
    """Relay events until the worker ends or its time is up: (status, timed out, phase)."""
    deadline = time.monotonic() + job.timeout_s
    last_phase = "start"
    try:
        while (rc := worker.wait(min(POLL_S, max(0.0, deadline - time.monotonic())))) is None:
            last_phase = _relay(tail.poll(), on_event, last_phase)
            if time.monotonic() > deadline:
                rc = worker.stop()
                return rc, True, _relay(tail.poll(), on_event, last_phase)
    except BaseException:
        worker.stop()
        raise
    return rc, False, _relay(tail.poll(), on_event, last_phase)  # what it said before exiting


def _relay(events: list[Event], on_event: EventHandler | None, phase: str) -> str:
    """Pass events on; return the latest phase the worker announced."""
    for event in events:
        if event.event == "phase" and event.phase is not None:
            phase = event.phase
        if on_event:
            on_event(event)
    return phase


def _die_with_parent() -> None:
    """In the child before exec: on Linux, SIGKILL it when the parent dies, so a killed
    parity leaves no worker behind writing into a bundle that will never be finished."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def command(job: Job, tmp: Path) -> list[str]:
    """The worker's command line: plain, or under torchrun for ``nproc=N`` / multi-node."""
    worker = module_command("parity.runner.worker", str(tmp), flags=("-X", "faulthandler"))
    nproc = job.side.nproc or 1
    nnodes = job.torchrun.nnodes
    if nproc <= 1 and nnodes <= 1:
        return worker
    run = module_command(
        "torch.distributed.run",
        "--no-python",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",
        "--monitor-interval=0.5",
        flags=("-X", "faulthandler"),
    )
    endpoint = job.torchrun.rdzv_endpoint
    if nnodes <= 1 and not endpoint:
        run.append("--standalone")
    else:
        run += [
            f"--nnodes={nnodes}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={endpoint}",
            f"--rdzv-id={job.fingerprint[:16]}",
        ]
    return run + worker
