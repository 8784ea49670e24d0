"""A worker's stdout and stderr, redacted on their way to the bundle's logs.

The worker writes into FIFOs (in a private temporary directory of their own, never in a
bundle), not into the log files: a thread of the parent reads them, redacts whole lines
with the job's redactor (``parity.safety.stream.StreamRedactor``) and appends them to
``stdout.log`` and ``stderr.log``. So no unredacted byte reaches a file at any moment: if
parity is killed, the hidden temporary bundle it leaves holds redacted logs (whatever was
still in a pipe is lost, not written raw).

A spawned worker gets the FIFOs' write ends as its stdout and stderr; a forked one opens
them by path (the zygote opens what it is given). The parent keeps a write end of each
open until the worker has ended, so the reader never sees an end of file early; then it
reads what is left until every writer is gone or the pipes stay quiet for ``QUIET_S`` (a
process the worker left behind holding them does not hold up the comparison), at most
``DRAIN_S``. Kept in the order written; a worker's last words before a crash are kept.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from parity.safety.redact import Redactor
from parity.safety.stream import StreamRedactor

LOGS = ("stdout.log", "stderr.log")
CHUNK = 1 << 16
PIPE_BYTES = 1 << 20
#: after the worker ended: stop reading once the pipes were quiet this long, or at most
QUIET_S = 0.25
DRAIN_S = 5.0
#: the whole lines a stream holds (``StreamRedactor``) go to the log once it was quiet this long
IDLE_S = 1.0


class _Stream:
    def __init__(self, fifo: Path, log: Path, redactor: Redactor) -> None:
        self.fifo = fifo
        self.read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        with contextlib.suppress(OSError, AttributeError):  # room for a burst (Linux)
            import fcntl

            fcntl.fcntl(self.read_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        #: the parent's own write end: no end of file before ``LogRelay.close``
        self.write_fd = os.open(fifo, os.O_WRONLY)
        self.log: IO[bytes] = log.open("ab")
        self.redact = StreamRedactor(redactor)
        #: the first error writing the log (the disk is full): from then on what the
        #: worker writes is read and dropped, so that it never blocks on a full pipe
        self.error: OSError | None = None
        self.heard = time.monotonic()

    def pump(self) -> bool:
        """Move what is readable to the log; False at the end of the stream."""
        try:
            chunk = os.read(self.read_fd, CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.heard = time.monotonic()
        self._write(self.redact.feed(chunk))
        return True

    def idle(self, now: float) -> None:
        """Let out the whole lines held once the stream was quiet ``IDLE_S``."""
        if self.redact.pending and now - self.heard >= IDLE_S:
            self._write(self.redact.idle())
            self.heard = now

    def _write(self, text: str) -> None:
        if text and self.error is None:
            try:
                self.log.write(text.encode("utf-8"))
                self.log.flush()
            except OSError as exc:
                self.error = exc
                with contextlib.suppress(OSError):
                    self.log.close()

    def finish(self) -> None:
        self._write(self.redact.close())
        for close in (self.log.close, lambda: os.close(self.read_fd)):
            with contextlib.suppress(OSError):
                close()


class LogRelay:
    """The redacting relay of one worker's two logs in the bundle directory ``tmp``."""

    def __init__(self, tmp: Path, redactor: Redactor) -> None:
        # named after the bundle being written: a worker's stdout names its bundle, so a
        # parent can tell its own worker from a process that reused the pid (check recovery)
        self.dir = Path(tempfile.mkdtemp(prefix=f"parity-logs-{tmp.name[:200]}-"))
        self.streams: dict[str, _Stream] = {}
        try:
            for name in LOGS:
                fifo = self.dir / name
                os.mkfifo(fifo, 0o600)
                self.streams[name] = _Stream(fifo, tmp / name, redactor)
        except BaseException:
            self._cleanup()
            raise
        self.ended: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True, name="parity-logs")
        self.thread.start()

    @property
    def error(self) -> tuple[str, OSError] | None:
        """The first log that could not be written, and why (None: both were)."""
        return next(((n, s.error) for n, s in self.streams.items() if s.error), None)

    @property
    def paths(self) -> tuple[Path, Path]:
        """The FIFOs a forked worker opens as its stdout and stderr."""
        return self.streams["stdout.log"].fifo, self.streams["stderr.log"].fifo

    @property
    def fds(self) -> tuple[int, int]:
        """The write ends a spawned worker gets as its stdout and stderr."""
        return self.streams["stdout.log"].write_fd, self.streams["stderr.log"].write_fd

    def _run(self) -> None:
        live = {s.read_fd: s for s in self.streams.values()}
        quiet_since = time.monotonic()
        try:
            while live:
                ready, _, _ = select.select(list(live), [], [], 0.05)
                now = time.monotonic()
                for fd in ready:
                    if not live[fd].pump():
                        del live[fd]
                    quiet_since = now
                for stream in live.values():
                    stream.idle(now)
                ended = self.ended
                if ended is not None and (now - quiet_since >= QUIET_S or now - ended >= DRAIN_S):
                    break
        finally:
            for stream in self.streams.values():
                stream.finish()

    def close(self) -> None:
        """The worker has ended: read what it left, finish the logs, remove the FIFOs."""
        for stream in self.streams.values():
            with contextlib.suppress(OSError):
                os.close(stream.write_fd)
        self.ended = time.monotonic()
        self.thread.join(DRAIN_S + 5.0)
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LogRelay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
