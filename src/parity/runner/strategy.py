"""How a job's worker is started, as one interface with a strategy per way: a process on
this machine (forked from a zygote, a fresh interpreter, or torchrun for ``nproc=N``:
``runner.launch.Launcher``), a Ray cluster node (``parity.measure.remote.OnNode``), or
inline in this process (``Inline``, for tests: stopping and resume logic without
processes).

The orchestrator holds strategies and asks one for each job (``Orchestrator.launch_for``
chooses); it never branches on where a side runs.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from parity.bundle import finalize, temp_dir_for, write_doc
from parity.model.job import EVENTS_FILE, JOB_FILE, Event, Job
from parity.runner.failure import failure_reason, write_failed
from parity.runner.launch import EventHandler, EventTail, recorded_job
from parity.runner.worker import job_redactor, main

if TYPE_CHECKING:
    from parity.model.bundle import Bundle


class Launch(Protocol):
    """Runs one job into a complete bundle at ``path``."""

    def prepare(self, job: Job) -> object:
        """Start what the job's runs start from (a zygote), as set-up, not a repeat's
        start-up."""
        ...

    def run(self, job: Job, path: Path, on_event: EventHandler | None = None) -> Bundle:
        """The job's bundle at ``path``, sealed (a failure is a failed bundle)."""
        ...

    def cpu_s(self) -> float:
        """CPU seconds its workers took that this process's own counters miss."""
        ...

    def close(self) -> None: ...


class Inline:
    """Runs a job's worker in this process (``parity.runner.worker.main``), its events
    relayed once it ends: for tests of what the orchestrator decides (stopping, resume,
    the budget) without starting processes. No timeout, no isolation: a job that hangs
    hangs the caller, so it is never the product's strategy."""

    def prepare(self, job: Job) -> object:
        return "inline"

    def run(self, job: Job, path: Path, on_event: EventHandler | None = None) -> Bundle:
        tmp = temp_dir_for(path)
        job = replace(job, launch="inline", spawned_ns=time.perf_counter_ns())
        write_doc(tmp / JOB_FILE, recorded_job(job))
        rc = main([str(tmp)])
        last = "start"
        for event in EventTail(tmp / EVENTS_FILE).poll():
            last = _phase(event, last)
            if on_event is not None:
                on_event(event)
        reason, _ = failure_reason(tmp, rc, False, job.timeout_s, last)
        if reason is not None:
            write_failed(tmp, job, reason)
        return finalize(tmp, path, redactor=job_redactor(job))

    def cpu_s(self) -> float:
        return 0.0  # this process's own

    def close(self) -> None:
        pass


def _phase(event: Event, last: str) -> str:
    return event.phase if event.event == "phase" and event.phase is not None else last
