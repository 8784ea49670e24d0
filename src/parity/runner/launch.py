"""Launching a side: a fresh process per run, a timeout, and a bundle either way.

Each run is a new process in its own session (so that a timeout can stop the whole
process group), with its stdout and stderr straight on the bundle's log files, so even a
segfault's last words are kept. The parent never touches a device. A ``Launcher`` starts
it one of two ways, and the manifest records which:

- ``fork``: forked from a zygote (``runner.zygote``) that imported torch and the worker
  once and touched no device, so a repeat does not pay for an interpreter and ``import
  torch`` again; for one-process sides on devices that may be initialised in a forked
  process (the CPU, CUDA: safe while the parent never initialised it);
- ``spawn``: a new ``python -m parity.runner.worker`` (nothing inherited but the
  environment): torchrun sides, devices whose runtime refuses a fork (TorchNeuron, XLA,
  any plugin device), or when the zygote cannot start. ``PARITY_LAUNCHER=spawn`` forces it.

Whatever happens, the side ends as a bundle under its final name: ``ok`` as the worker
wrote it, or ``failed`` with the reason (the worker's exception, the signal that killed
it, or the timeout) and the tail of its stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
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
    MANIFEST,
    METRICS,
    OUTPUT_TENSORS,
    OUTPUTS,
    finalize,
    read_doc,
    temp_dir_for,
    write_doc,
)
from parity.errors import BundleError
from parity.model import SCHEMA_VERSION
from parity.model.codec import decode, loads
from parity.model.job import ERROR_FILE, EVENTS_FILE, JOB_FILE, Event, Job, WorkerError
from parity.model.manifest import Manifest
from parity.model.workload import WorkloadRef
from parity.runner.cpu import process_cpu_s
from parity.runner.zygote import Zygote, ZygoteError
from parity.version import __version__

EventHandler = Callable[[Event], None]
STDERR_TAIL_LINES = 25
#: how often a running worker's events are relayed (its end is noticed at once)
POLL_S = 0.1
#: what a failed bundle does not keep: figures of a run that did not finish
PARTIAL = (METRICS, OUTPUTS, OUTPUT_TENSORS)


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def stderr_tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


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


#: device types a forked worker may initialise (their runtime was never started in the
#: zygote); every other device type is spawned
FORK_SAFE = frozenset({"cpu", "cuda"})


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
        self.broken: str | None = None
        self.lock = threading.Lock()  # parts run from threads share one zygote

    def how(self, job: Job) -> Literal["fork", "spawn"]:
        """``fork`` or ``spawn`` for this job."""
        one_process = (job.side.nproc or 1) <= 1 and job.torchrun.nnodes <= 1
        if self.fork and self.broken is None and one_process and job.side.device in FORK_SAFE:
            return "fork"
        return "spawn"

    def prepare(self, job: Job) -> Literal["fork", "spawn"]:
        """How the job will start, with the zygote running where it forks (its start is
        the comparison's set-up, not a repeat's start-up)."""
        how = self.how(job)
        with self.lock:
            if how == "fork" and (self.zygote is None or not self.zygote.alive):
                if self.zygote is not None:
                    self.zygote.close()
                try:
                    self.zygote = Zygote.start()
                except ZygoteError as exc:  # spawn from now on
                    self.broken = str(exc)
                    return "spawn"
        return how

    def start(self, job: Job, tmp: Path, env: dict[str, str]) -> Worker:
        out, err = tmp / "stdout.log", tmp / "stderr.log"
        if job.launch == "fork" and self.zygote is not None:
            try:
                return Forked(self.zygote, self.zygote.fork(tmp, out, err, env))
            except ZygoteError as exc:  # spawn from now on
                self.broken = str(exc)
                raise
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(
                command(job, tmp),
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        return Spawned(proc)

    def cpu_s(self) -> float:
        """CPU seconds of the zygote and the workers it forked and reaped (spawned workers
        count in this process's ``RUSAGE_CHILDREN``)."""
        zygote = self.zygote
        return process_cpu_s(zygote.proc.pid) if zygote is not None and zygote.alive else 0.0

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None


def run_job(
    job: Job,
    final: Path,
    *,
    on_event: EventHandler | None = None,
    env: dict[str, str] | None = None,
    launcher: Launcher | None = None,
) -> Path:
    """Run one side in a fresh process and leave a complete bundle at ``final``.

    The worker is stopped after ``job.timeout_s``; ``on_event`` sees each event the
    worker announces (phases, progress, checkpoints) as it happens. Without a
    ``launcher`` the worker is spawned."""
    launcher = launcher or Launcher(fork=False)
    tmp = temp_dir_for(final)
    child_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    job = replace(job, launch=launcher.prepare(job), spawned_ns=time.perf_counter_ns())
    write_doc(tmp / JOB_FILE, job)
    try:
        worker = launcher.start(job, tmp, child_env)
    except ZygoteError:
        job = replace(job, launch="spawn", spawned_ns=time.perf_counter_ns())
        write_doc(tmp / JOB_FILE, job)
        worker = launcher.start(job, tmp, child_env)
    rc, timed_out, last_phase = _watch(worker, EventTail(tmp / EVENTS_FILE), job, on_event)
    reason = _failure_reason(tmp, rc, timed_out, job.timeout_s, last_phase)
    if reason is not None:
        _write_failed(tmp, job, reason)
    return finalize(tmp, final)


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
    worker = ["-m", "parity.runner.worker", str(tmp)]
    nproc = job.side.nproc or 1
    nnodes = job.torchrun.nnodes
    if nproc <= 1 and nnodes <= 1:
        return [sys.executable, "-X", "faulthandler", *worker]
    run = [
        sys.executable,
        "-X",
        "faulthandler",
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",
        "--monitor-interval=0.5",
    ]
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


_ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.S)


def torchrun_root_cause(stderr: str) -> str | None:
    """torchrun's "Root Cause (first observed failure)": which rank died, and how."""
    match = _ROOT_CAUSE.search(stderr)
    if match is None:
        return None
    rank, code = int(match[1]), int(match[2])
    how = f"killed by {_signal_name(code)}" if code < 0 else f"exited with code {code}"
    return f"rank {rank} {how}; torchrun stopped the other ranks"


def _failure_reason(
    tmp: Path, rc: int, timed_out: bool, timeout_s: float, phase: str
) -> str | None:
    if timed_out:
        return (
            f"timed out after {timeout_s:g} s in phase '{phase}': raise --timeout or use "
            "a smaller --size or fewer --steps"
        )
    error = _worker_error(tmp / ERROR_FILE, phase)
    root = torchrun_root_cause(stderr_tail(tmp / "stderr.log", 200)) if rc != 0 else None
    if root is not None:  # torchrun names the rank that failed first
        return f"{root} (phase '{phase}')" + (f"; first error: {error}" if error else "")
    if error is not None:
        return error
    if rc < 0:
        name = _signal_name(rc)
        hint = " (the kernel's OOM killer sends SIGKILL)" if name == "SIGKILL" else ""
        return f"the worker was killed by {name}{hint} in phase '{phase}'"
    if rc != 0:
        return f"the worker exited with code {rc} in phase '{phase}'"
    manifest = _worker_manifest(tmp)
    if manifest is None or not manifest.ok:
        return f"the worker exited without finishing its bundle (phase '{phase}')"
    return None


def _worker_error(path: Path, phase: str) -> str | None:
    if not path.is_file():
        return None
    try:
        err = decode(WorkerError, loads(path.read_text()))
    except (OSError, UnicodeDecodeError, ValueError):
        return f"the worker failed in phase '{phase}' and its error report is unreadable"
    return f"{err.type} in phase '{err.phase}': {err.message}"


def _worker_manifest(tmp: Path) -> Manifest | None:
    """The manifest the worker wrote, if it wrote one that decodes."""
    if not (tmp / MANIFEST).is_file():
        return None
    try:
        return read_doc(tmp / MANIFEST, Manifest)
    except BundleError:
        return None


def failed_manifest(job: Job, reason: str, stderr: str, written: Manifest | None) -> Manifest:
    """The ``failed`` manifest: what the worker had written (environment, resolved
    settings, start time), or what the job says where it wrote nothing readable."""
    if written is None:
        written = Manifest(
            schema_version=SCHEMA_VERSION,
            parity_version=__version__,
            status="failed",
            reason=reason,
            role=job.role,
            repeat=job.repeat,
            mode=job.mode,
            side=job.side,
            workload=WorkloadRef(
                spec=job.workload,
                fingerprint=job.fingerprint,
                parts=job.parts,
                description=job.description,
            ),
        )
    return replace(written, status="failed", reason=reason, stderr_tail=stderr)


def _write_failed(tmp: Path, job: Job, reason: str) -> None:
    manifest = failed_manifest(job, reason, stderr_tail(tmp / "stderr.log"), _worker_manifest(tmp))
    for partial in PARTIAL:
        (tmp / partial).unlink(missing_ok=True)
    write_doc(tmp / MANIFEST, manifest)
