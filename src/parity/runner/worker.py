"""The worker: one side, one fresh process, every mode.

Run as ``python -m parity.runner.worker BUNDLE_TMP_DIR`` (under torchrun for a side with
``nproc=N``: every rank runs it). The directory holds ``job.json``, decoded once into a
typed ``Job``; its ``mode`` picks the mode object (``parity.runner.modes``), which runs
on a set-up :class:`~parity.runner.session.SideSession` and writes the bundle's files
into the directory, ``manifest.json`` with status ``ok`` last.

One error path for every mode: a Python exception is written to ``error.json`` (a typed
``WorkerError`` with the phase it happened in; under torchrun the first rank to fail
wins) and the exit code is 3; if the mode had armed a failure scan, it runs then, so a
failed bundle still lists every unsupported op. A crash leaves no ``error.json`` and the
parent records the signal.
"""

from __future__ import annotations

import sys
import time

_T0 = time.perf_counter_ns()

import contextlib  # noqa: E402
import os  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

from parity.model.codec import decode, dumps, loads  # noqa: E402
from parity.model.job import ERROR_FILE, JOB_FILE, Job, WorkerError  # noqa: E402

EXIT_FAILED = 3


def read_job(tmp: Path) -> Job:
    """``job.json``, decoded strictly (a bad key is an error naming its path)."""
    return decode(Job, loads((tmp / JOB_FILE).read_text()))


def write_error(tmp: Path, exc: BaseException, phase: str) -> None:
    """``error.json``; the first failure wins (under torchrun, other ranks fail after it)."""
    error = WorkerError(
        type=type(exc).__name__,
        message=str(exc),
        phase=phase,
        traceback=traceback.format_exc(limit=20),
    )
    with contextlib.suppress(FileExistsError), (tmp / ERROR_FILE).open("x") as f:
        f.write(dumps(error))


def main(argv: list[str]) -> int:
    tmp = Path(argv[0])
    session = None
    try:
        from parity.runner.modes import mode_for
        from parity.runner.session import SideSession

        job = read_job(tmp)
        # forked from a zygote, this module was imported before the job existed: the
        # worker's own start is now
        started = _T0 if job.spawned_ns <= _T0 else time.perf_counter_ns()
        session = SideSession(job, tmp, started_ns=started)
        mode = mode_for(job.mode)
        session.setup(join_group=mode.join_group)
        mode.run(session)
        session.teardown()
    except BaseException as exc:  # the parent needs every failure, KeyboardInterrupt too
        write_error(tmp, exc, session.phase if session is not None else "import")
        if session is not None:
            with contextlib.suppress(Exception):  # the error already recorded is what matters
                session.scan_after_failure(exc)
        return EXIT_FAILED
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # torch 2.13 can abort in static destructors of communication threads at exit
        # ("terminate called without an active exception"): the bundle is complete, leave now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
