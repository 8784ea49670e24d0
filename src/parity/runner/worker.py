"""The worker: one side, one fresh process, every mode.

Run as ``python -m parity.runner.worker BUNDLE_TMP_DIR`` (under torchrun for a side with
``nproc=N``: every rank runs it). The directory holds ``job.json``, decoded once into a
typed ``Job``; its ``mode`` picks the mode object (``parity.runner.modes``), which runs
on a set-up :class:`~parity.runner.session.SideSession` and writes the bundle's files
into the directory, ``manifest.json`` with status ``ok`` last.

One error path for every mode: a Python exception is written to ``error.json`` (a typed
``WorkerError`` with the phase it happened in, its message and traceback redacted; under
torchrun the first rank to fail wins) and the exit code is 3; if the mode had armed a
failure scan, it runs then, so a failed bundle still lists every unsupported op. Where
even ``error.json`` cannot be written (the disk is full), the worker drops the figures
of the unfinished run to make room and tries once more, else exits with 4. A crash
leaves no ``error.json`` and the parent records the signal.

``PARITY_WORKER_HOOKS`` names modules called before the job (tests plant faults with it).
"""

from __future__ import annotations

import sys
import time

_T0 = time.perf_counter_ns()

import contextlib  # noqa: E402
import errno  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import traceback  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from parity.model.codec import decode, dumps, loads  # noqa: E402
from parity.model.job import ERROR_FILE, JOB_FILE, Job, ScriptPlan, WorkerError  # noqa: E402
from parity.plugins import run_worker_hooks  # noqa: E402

if TYPE_CHECKING:
    from parity.safety.redact import Redactor

EXIT_FAILED = 3
#: the variable that brings a script job's real arguments (never written to a file)
SCRIPT_ARGS_ENV = "PARITY_SCRIPT_ARGS"
#: not even ``error.json`` could be written
EXIT_UNWRITABLE = 4
#: an exception's message is kept up to this length (redacted first, then shortened)
MESSAGE_CHARS = 4000


def read_job(tmp: Path) -> Job:
    """``job.json``, decoded strictly (a bad key is an error naming its path), with a
    script's real arguments from ``SCRIPT_ARGS_ENV`` (``job.json`` holds them masked),
    taken out of the environment so that the script does not inherit them."""
    job = decode(Job, loads((tmp / JOB_FILE).read_text()))
    real = os.environ.pop(SCRIPT_ARGS_ENV, None)
    if real is not None and isinstance(job.plan, ScriptPlan):
        args = tuple(str(a) for a in json.loads(real))
        job = replace(job, plan=replace(job.plan, args=args))
    return job


def job_redactor(job: Job | None) -> Redactor:
    """The redactor for what a job's worker writes: the process's, also knowing the secret
    values a script's command line carries (the script may print or raise them) and
    those of the ``.env`` files its workload or script may load into its environment."""
    from parity.safety import envfile
    from parity.safety.redact import carried_values, redactor

    r = redactor()
    if job is None:
        return r
    starts = [Path.cwd()]
    file, colon, _ = job.workload.name.rpartition(":")
    if colon and file.endswith(".py"):
        starts.append(Path(file).expanduser().parent)
    script = job.plan if isinstance(job.plan, ScriptPlan) else None
    if script is not None:
        starts += [Path(script.cwd), (Path(script.cwd) / script.target).parent]
    known = envfile.secrets(starts)
    if script is not None:
        known += carried_values(script.args)
    return r.knowing(known) if known else r


def _failing_line(exc: BaseException) -> str | None:
    """``file:line`` of the innermost traceback frame in the user's own code, or None."""
    try:
        from parity.probes.source import where_line
        from parity.workloads.code import is_local

        frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_local(f.filename)]
    except Exception:  # the error report must be written whatever this finds
        return None
    return where_line(frames[-1].filename, frames[-1].lineno or 0) if frames else None


def write_error(
    tmp: Path, exc: BaseException, phase: str, job: Job | None = None
) -> OSError | None:
    """``error.json``, redacted; the first failure wins (under torchrun, other ranks fail
    after it). The error that kept it from being written even after freeing space (None:
    it was written)."""
    from parity.bundle import PARTIAL

    r = job_redactor(job)
    error = WorkerError(
        type=type(exc).__name__,
        message=r.text(str(exc))[:MESSAGE_CHARS],
        phase=phase,
        traceback=r.text(traceback.format_exc(limit=-20)),  # the innermost frames
        source=_failing_line(exc),
    )
    staged = tmp / f".{ERROR_FILE}.{os.getpid()}"
    failed: OSError | None = None
    for attempt in range(2):
        try:
            staged.write_text(dumps(error))
            with contextlib.suppress(FileExistsError):
                os.link(staged, tmp / ERROR_FILE)  # atomic: never a torn error.json
            staged.unlink()
            return None
        except OSError as err:
            failed = err
            with contextlib.suppress(OSError):
                staged.unlink(missing_ok=True)
            if attempt == 0:  # the disk is full: the unfinished run's figures go first
                for name in PARTIAL:
                    with contextlib.suppress(OSError):
                        (tmp / name).unlink(missing_ok=True)
    return failed


#: the line a worker that could not write its error report leaves last on its stderr
UNWRITABLE_LINE = "parity worker: could not write its bundle: "


def _say_unwritable(error: OSError, cwd: str, job: Job | None) -> None:
    """Why the bundle could not be written, as a last line on stderr (the parent reads it
    from the log's tail): the error, and what the workload did that may explain it."""
    code = errno.errorcode.get(error.errno or 0)
    why = (error.strerror or str(error)).lower() + (f" ({code})" if code else "")
    with contextlib.suppress(OSError, ValueError):
        now = os.getcwd()
        if now != cwd:
            why += f"; the workload changed the working directory to {now}"
    with contextlib.suppress(Exception):
        sys.stderr.write(f"\n{UNWRITABLE_LINE}{job_redactor(job).text(why)}\n")
        sys.stderr.flush()


def main(argv: list[str]) -> int:
    tmp = Path(os.path.abspath(argv[0]))  # the workload may change the working directory
    cwd = os.getcwd()
    session = None
    job = None
    try:
        run_worker_hooks(sys.modules[__name__])
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
        phase = session.phase if session is not None else "import"
        unwritten = write_error(tmp, exc, phase, job)
        if unwritten is not None:
            _say_unwritable(unwritten, cwd, job)
            return EXIT_UNWRITABLE
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
    from parity.exiting import leave

    leave(main(sys.argv[1:]))
