"""A worker held in its job until a test kills its node: the tests of a node lost
mid-job; never set in a normal run.

A node started with ``environ(DIR)`` in its environment loads this hook into each
worker, which does nothing until a test arms it (``arm``): the first worker to read a
measuring job of the armed side claims the arming (one worker alone: a rename), says
so in ``DIR/held`` and waits there, its job read and not ended, until ``DIR/release``
appears or ``HOLD_S`` pass. The job runs again elsewhere unheld.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from parity.plugins import WORKER_HOOKS_VAR

ENV_VAR = "PARITY_TEST_HOLD"
#: the longest a worker is held where no test kills it or lets it go
HOLD_S = 600.0
ARMED, CLAIMED, HELD, RELEASE = "armed", "claimed", "held", "release"


def environ(directory: Path) -> dict[str, str]:
    """The node environment that loads the hook, armed through ``directory``."""
    return {ENV_VAR: str(directory), WORKER_HOOKS_VAR: __name__}


def arm(directory: Path, role: str) -> None:
    """Hold the next measuring job of ``role`` that a worker reads."""
    for name in (CLAIMED, HELD, RELEASE):
        (directory / name).unlink(missing_ok=True)
    (directory / ARMED).write_text(role)


def on_worker_start(worker: Any) -> None:
    """Called by each worker before its job (``PARITY_WORKER_HOOKS``): its ``read_job``
    wrapped, to hold the job it reads where the hold is armed for its side."""
    where = os.environ.get(ENV_VAR)
    if not where:
        return
    directory, read_job = Path(where), worker.read_job

    def held(tmp: Path) -> Any:
        job = read_job(tmp)
        if job.mode == "measure" and _claim(directory, job.role):
            (directory / HELD).write_text(f"{job.role} {job.repeat} {os.getpid()}")
            deadline = time.monotonic() + HOLD_S
            while not (directory / RELEASE).exists() and time.monotonic() < deadline:
                time.sleep(0.2)
        return job

    worker.read_job = held


def _claim(directory: Path, role: str) -> bool:
    """Whether this worker holds its job: the hold is armed for ``role`` and no other
    worker claimed it first."""
    try:
        if (directory / ARMED).read_text() != role:
            return False
        (directory / ARMED).rename(directory / CLAIMED)
    except OSError:  # not armed, or another worker's claim came first
        return False
    return True
