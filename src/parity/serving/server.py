"""A server that parity starts: its own process group, a health wait timed as cold start,
and a stop that ends the whole group whatever happened.

The command runs with ``start_new_session`` (its own process group), its output goes to
two log files of the side's bundle (redacted when the bundle is sealed). Cold start is
from the launch to the first ``200`` from ``/health`` or ``/v1/models``: on a Neuron
server that is loading and compiling one graph per sequence-length bucket. A server that
exits, or is not healthy within ``--ready-timeout``, is the side's failure, with the tail
of its stderr (redacted).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from parity.errors import SideError
from parity.safety.redact import redact

HEALTH_PATHS = ("/health", "/v1/models")
#: the characters of stderr kept in a failure's reason
TAIL = 400


def answers(base: str, timeout: float = 2.0) -> str | None:
    """The first health path that answers 200 at ``base`` (None: none does)."""
    for path in HEALTH_PATHS:
        try:
            with urllib.request.urlopen(base.rstrip("/") + path, timeout=timeout) as resp:
                if resp.status == 200:
                    return path
        except (urllib.error.URLError, OSError, ValueError):
            continue
    return None


@dataclass
class Started:
    """A running server parity started."""

    command: tuple[str, ...]
    process: subprocess.Popen[bytes]
    cold_start_s: float
    stdout: Path
    stderr: Path

    def stop(self, grace_s: float = 10.0) -> None:
        stop_group(self.process, grace_s)


def stop_group(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM to the process group, then SIGKILL after ``grace_s``; never raises."""
    if process.poll() is not None:
        _reap_group(process.pid)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace_s)
    _reap_group(process.pid)


def _reap_group(pgid: int) -> None:
    """Children left in the group after its leader ended."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return redact(" ".join(text[-TAIL:].split()))


def start(
    command: Sequence[str], base: str, logs: Path, *, ready_timeout_s: float = 600.0
) -> Started:
    """Start ``command`` and wait until ``base`` answers; ``SideError`` where the server
    exits first or is not healthy in time (the group is stopped either way)."""
    logs.mkdir(parents=True, exist_ok=True)
    out, err = logs / "server.stdout.log", logs / "server.stderr.log"
    began = time.perf_counter()
    with out.open("wb") as o, err.open("wb") as e:
        try:
            process = subprocess.Popen(
                list(command), stdout=o, stderr=e, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as exc:
            raise SideError(f"the server command could not start: {exc.strerror or exc}") from None
    try:
        while True:
            code = process.poll()
            if code is not None:
                raise SideError(
                    f"the server exited with code {code} before it answered: {_tail(err)}"
                )
            if answers(base, timeout=1.0) is not None:
                break
            if time.perf_counter() - began > ready_timeout_s:
                raise SideError(
                    f"the server did not answer /health or /v1/models within "
                    f"{ready_timeout_s:g} s: raise --ready-timeout or check its log: {_tail(err)}"
                )
            time.sleep(0.25)
    except BaseException:
        stop_group(process)
        raise
    return Started(
        command=tuple(command),
        process=process,
        cold_start_s=time.perf_counter() - began,
        stdout=out,
        stderr=err,
    )
