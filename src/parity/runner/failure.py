"""Why a side failed, from what its worker left: ``error.json`` (its exception, redacted),
the signal that killed it, a timeout, torchrun's root cause, or a bundle it did not
finish; and the ``failed`` manifest that records it with the tail of its stderr.

The tail is read from the end of the log (a worker may have written gigabytes) and
redacted with the job's redactor, like the reason. A reason also says whether the worker
failed to write its own bundle (an I/O error): then no bundle goes under the final name.
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import replace
from pathlib import Path

from parity.bundle import MANIFEST, PARTIAL, read_doc, write_doc
from parity.errors import BundleError, OutputError
from parity.model import SCHEMA_VERSION
from parity.model.codec import decode, loads
from parity.model.job import ERROR_FILE, Job, WorkerError
from parity.model.manifest import FailedAt, Manifest
from parity.runner.worker import EXIT_UNWRITABLE, job_redactor
from parity.version import __version__

STDERR_TAIL_LINES = 25
#: the tail is read from at most this many last bytes, and each line kept is shortened
TAIL_BYTES = 256 << 10
TAIL_LINE_CHARS = 1000


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def stderr_tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    """The last lines of a log, read from its end (a worker may have written gigabytes)."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join(
        ln if len(ln) <= TAIL_LINE_CHARS else ln[:TAIL_LINE_CHARS] + "..." for ln in kept
    )


_ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.S)
_FAILURE = re.compile(r"rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.S)
#: a rank's own error that says its peer went away first (gloo, NCCL, the socket)
_LOST_PEER = re.compile(
    r"remote worker|remote process|closed by peer|reset by peer|connection closed", re.I
)


def _how(code: int) -> str:
    return f"killed by {_signal_name(code)}" if code < 0 else f"exited with code {code}"


def torchrun_root_cause(stderr: str, error: str | None = None) -> str | None:
    """torchrun's "Root Cause (first observed failure)": which rank died, and how.

    torchrun's first observed failure can be a consequence: when one rank is killed from
    outside (SIGKILL: the OOM killer, an operator), its peer fails in a collective at
    about the same moment, and on a loaded machine torchrun may see that one first. When
    the worker's own ``error`` says its peer went away and torchrun lists another rank
    killed by SIGKILL, that rank is named first and the other as what followed."""
    match = _ROOT_CAUSE.search(stderr)
    if match is None:
        return None
    rank, code = int(match[1]), int(match[2])
    if error is not None and _LOST_PEER.search(error) and "Failures:" in stderr:
        listed = stderr.split("Failures:", 1)[1]
        for other, other_code in ((int(r), int(c)) for r, c in _FAILURE.findall(listed)):
            if other != rank and other_code == -signal.SIGKILL:
                return (
                    f"rank {other} {_how(other_code)}; rank {rank} then {_how(code)} on "
                    "losing its peer; torchrun stopped the other ranks"
                )
    return f"rank {rank} {_how(code)}; torchrun stopped the other ranks"


def failure_reason(
    tmp: Path, rc: int, timed_out: bool, timeout_s: float, phase: str
) -> tuple[str | None, bool]:
    """Why the side failed (None: it did not), and whether that was an I/O error while
    its bundle was written (then nothing goes under the final name)."""
    if timed_out:
        return (
            f"timed out after {timeout_s:g} s in phase '{phase}': raise --timeout or use "
            "a smaller --size or fewer --steps"
        ), False
    error, unwritable = _worker_error(tmp / ERROR_FILE, phase)
    if rc == EXIT_UNWRITABLE:
        return f"the worker could not write its bundle in phase '{phase}' (is the disk full?)", True
    root = torchrun_root_cause(stderr_tail(tmp / "stderr.log", 200), error) if rc != 0 else None
    if root is not None:  # torchrun names the rank that failed first
        return f"{root} (phase '{phase}')" + (f"; first error: {error}" if error else ""), False
    if error is not None:
        return error, unwritable
    if rc < 0:
        name = _signal_name(rc)
        hint = " (the kernel's OOM killer sends SIGKILL)" if name == "SIGKILL" else ""
        return f"the worker was killed by {name}{hint} in phase '{phase}'", False
    if rc != 0:
        return f"the worker exited with code {rc} in phase '{phase}'", False
    manifest = worker_manifest(tmp)
    if manifest is None or not manifest.ok:
        return f"the worker exited without finishing its bundle (phase '{phase}')", False
    return None, False


def _worker_error(path: Path, phase: str) -> tuple[str | None, bool]:
    """The worker's error as a reason, and whether it was writing its bundle that failed."""
    if not path.is_file():
        return None, False
    try:
        err = decode(WorkerError, loads(path.read_text()))
    except (OSError, UnicodeDecodeError, ValueError):
        return f"the worker failed in phase '{phase}' and its error report is unreadable", False
    if err.type == OutputError.__name__:
        return f"the worker could not write its bundle in phase '{err.phase}': {err.message}", True
    at = f" (at {err.source})" if err.source else ""
    return f"{err.type} in phase '{err.phase}'{at}: {err.message}", False


def worker_manifest(tmp: Path) -> Manifest | None:
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
            workload=job.workload_ref(),
        )
    r = job_redactor(job)
    return replace(written, status="failed", reason=r.text(reason), stderr_tail=r.text(stderr))


def failed_at(tmp: Path) -> FailedAt | None:
    """Where the worker's error (``error.json``) was raised in the user's own code, or
    None (no error written, unreadable, or raised outside the user's code)."""
    path = tmp / ERROR_FILE
    try:
        err = decode(WorkerError, loads(path.read_text()))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if err.source is None or err.type == OutputError.__name__:
        return None
    return FailedAt(type=err.type, phase=err.phase, source=err.source)


def write_failed(tmp: Path, job: Job, reason: str) -> None:
    manifest = failed_manifest(job, reason, stderr_tail(tmp / "stderr.log"), worker_manifest(tmp))
    manifest = replace(manifest, failed_at=failed_at(tmp))
    for partial in PARTIAL:
        (tmp / partial).unlink(missing_ok=True)
    write_doc(tmp / MANIFEST, manifest)
