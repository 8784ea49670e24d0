"""Launching a side: a fresh interpreter per run, a timeout, and a bundle either way.

Each side runs in a new ``python -m parity.runner.worker`` process (the ``spawn``
semantics: nothing is inherited from the parent but the environment; TorchNeuron refuses
to re-initialise in a fork), in its own session so that a timeout can stop the whole
process group. Its stdout and stderr go straight to the bundle's log files, so even a
segfault's last words are kept. The parent never touches a device.

Whatever happens, the side ends as a bundle under its final name: ``ok`` as the worker
wrote it, or ``failed`` with the reason (the worker's exception, the signal that killed
it, or the timeout) and the tail of its stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parity.bundle import MANIFEST, SCHEMA_VERSION, finalize, temp_dir_for, write_json
from parity.runner.job import ERROR_FILE, EVENTS_FILE, JOB_FILE, Job

EventHandler = Callable[[dict[str, Any]], None]
STDERR_TAIL_LINES = 25
POLL_S = 0.05


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

    def poll(self) -> list[dict[str, Any]]:
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
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out


def run_job(
    job: Job,
    final: Path,
    *,
    timeout_s: float,
    on_event: EventHandler | None = None,
    env: dict[str, str] | None = None,
) -> Path:
    """Run one side in a fresh process and leave a complete bundle at ``final``."""
    tmp = temp_dir_for(final)
    job.settings = {**job.settings, "timeout_s": timeout_s}
    child_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    tail = EventTail(tmp / EVENTS_FILE)
    last_phase = "start"
    with (tmp / "stdout.log").open("wb") as out, (tmp / "stderr.log").open("wb") as err:
        job.spawned_ns = time.perf_counter_ns()
        job.write(tmp / JOB_FILE)
        proc = subprocess.Popen(
            command(job, tmp),
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=child_env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + timeout_s
        timed_out = False
        try:
            while proc.poll() is None:
                last_phase = _relay(tail.poll(), on_event, last_phase)
                if time.monotonic() > deadline:
                    timed_out = True
                    _stop(proc)
                    break
                time.sleep(POLL_S)
        except BaseException:
            _stop(proc)
            raise
        last_phase = _relay(tail.poll(), on_event, last_phase)  # what it said before exiting
    rc = proc.wait()
    reason = _failure_reason(tmp, rc, timed_out, timeout_s, last_phase)
    if reason is not None:
        _write_failed(tmp, job, reason)
    return finalize(tmp, final)


def _relay(events: list[dict[str, Any]], on_event: EventHandler | None, phase: str) -> str:
    """Pass events on; return the latest phase the worker announced."""
    for event in events:
        if event.get("event") == "phase":
            phase = str(event.get("phase"))
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
    from parity.spec import parse_side

    worker = ["-m", "parity.runner.worker", str(tmp)]
    if job.settings.get("mode") == "script":  # script mode: the user's script, instrumented
        worker = ["-m", "parity.runner.script_wrapper", str(tmp)]
    nproc = parse_side(job.side, check_device=False).nproc or 1
    nnodes = int(job.settings.get("nnodes") or 1)
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
    endpoint = job.settings.get("rdzv_endpoint")
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


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the worker's process group, then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


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
    try:
        status = json.loads((tmp / MANIFEST).read_text()).get("status")
    except (OSError, json.JSONDecodeError):
        status = None
    if status != "ok":
        return f"the worker exited without finishing its bundle (phase '{phase}')"
    return None


def _worker_error(path: Path, phase: str) -> str | None:
    if not path.is_file():
        return None
    try:
        err = json.loads(path.read_text())
        return f"{err['type']} in phase '{err['phase']}': {err['message']}"
    except (json.JSONDecodeError, KeyError, OSError):
        return f"the worker failed in phase '{phase}' and its error report is unreadable"


def _write_failed(tmp: Path, job: Job, reason: str) -> None:
    manifest: dict[str, Any] = {}
    with contextlib.suppress(OSError, json.JSONDecodeError):
        manifest = json.loads((tmp / MANIFEST).read_text())
    if not isinstance(manifest, dict) or "side" not in manifest:
        from parity import __version__
        from parity.spec import parse_side

        manifest = {
            "schema_version": SCHEMA_VERSION,
            "parity_version": __version__,
            "role": job.role,
            "repeat": job.repeat,
            "side": parse_side(job.side, check_device=False).to_dict(),
            "workload": {
                "spec": job.workload,
                "fingerprint": job.fingerprint,
                "parts": job.parts,
                "description": job.description,
            },
            "settings": job.settings,
        }
    manifest.update(status="failed", reason=reason, stderr_tail=stderr_tail(tmp / "stderr.log"))
    for partial in ("metrics.json", "numerics.json", "numerics.safetensors"):
        (tmp / partial).unlink(missing_ok=True)
    write_json(tmp / MANIFEST, manifest)
