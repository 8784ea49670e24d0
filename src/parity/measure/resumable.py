"""What ``--resume`` and the caches check before they reuse a bundle: that it is the run
of the job it stands for (role, repeat, side, mode, workload, and the ``request.json`` it
was run for), so that an edited request or a bundle copied in is refused in one line,
never judged as if it belonged."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from parity.bundle import COMPLIANCE_RUNS, load_bundle, sha256_file
from parity.bundle import REQUEST as REQUEST_FILE
from parity.errors import BundleError, ResumeError
from parity.model.bundle import Bundle
from parity.model.job import Job
from parity.model.spec import SideSpec

log = logging.getLogger("parity")


def _differs(*pairs: tuple[str, object, object]) -> str | None:
    for what, got, wanted in pairs:
        if got != wanted:
            return f"it is a run of {what} {got}, where this one is of {wanted}"
    return None


def _request_of(bundle: Bundle) -> str | None:
    """The digest of the ``request.json`` a bundle was run for (its ``job.json``, as
    loaded with the bundle)."""
    return bundle.job.request if bundle.job is not None else None


def _other_request() -> str:
    return f"it was run for another {REQUEST_FILE} (edited since, or the bundle copied here)"


def mismatch(bundle: Bundle, job: Job) -> str | None:
    """Why ``bundle`` is not the run of ``job`` (another role, repeat, side, mode, workload
    or request), or None: what ``--resume`` and the caches check before reusing one."""
    m = bundle.manifest
    problem = _differs(
        ("role", m.role, job.role),
        ("repeat", m.repeat, job.repeat),
        ("side", str(m.side), str(job.side)),
        ("mode", m.mode, job.mode),
        ("workload fingerprint", m.workload.fingerprint[:12], job.fingerprint[:12]),
    )
    if problem is None and m.workload.fingerprint != job.fingerprint:
        problem = "it is a run of another workload fingerprint"
    if problem is None and job.request is not None and _request_of(bundle) != job.request:
        problem = _other_request()
    return problem


def check_resumable(out: Path, sides: dict[str, SideSpec]) -> None:
    """Before anything runs again: every complete bundle of ``out``'s rounds and compliance
    runs is where its manifest says it belongs (role, repeat, side) and was run for
    ``out/request.json`` as it is now; else a ResumeError in one line. (Its workload
    fingerprint is checked when the workload is prepared, by ``Orchestrator.run``.)"""
    digest = sha256_file(out / REQUEST_FILE)
    for role, side in sides.items():
        where = out / role
        names = sorted(p.name for p in where.iterdir()) if where.is_dir() else []
        for name in names:
            path = where / name
            repeat = int(name[1:]) if name[:1] == "r" and name[1:].isdigit() else None
            if name in COMPLIANCE_RUNS:
                repeat = 0
            if repeat is None or path.is_symlink() or not path.is_dir():
                continue
            try:
                bundle = load_bundle(path)
            except BundleError:
                continue  # run again in its turn
            m = bundle.manifest
            problem = _differs(
                ("role", m.role, role),
                ("repeat", m.repeat, repeat),
                ("side", str(m.side), str(side)),
            )
            if problem is None and _request_of(bundle) != digest:
                problem = _other_request()
            if problem is not None:
                raise ResumeError(
                    f"{path} does not belong here: {problem}; remove it (or rerun the "
                    "comparison into a new --out)"
                )


def belonging(bundle: Bundle, job: Job) -> Bundle:
    """``bundle`` if it is the run of ``job``, else a ResumeError in one line."""
    problem = mismatch(bundle, job)
    if problem is not None:
        raise ResumeError(
            f"{bundle.path} does not belong here: {problem}; remove it (or rerun the "
            "comparison into a new --out)"
        )
    return bundle


def _interrupted(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def says_how_to_resume(out: Path) -> Iterator[None]:
    """While a comparison measures into ``out``: Ctrl-C, or SIGTERM (turned into the same
    interrupt, so that the workers are stopped and the scratch is removed as on Ctrl-C),
    ends it with a line that says how to continue it; its complete bundles are kept."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    if main:
        signal.signal(signal.SIGTERM, _interrupted)
    try:
        yield
    except KeyboardInterrupt:
        log.warning(
            "parity: interrupted; parity compare --resume %s continues it, reusing the "
            "bundles already complete",
            out,
        )
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
