"""A comparison submitted to the cluster as a Ray Job (``parity compare --submit``), and
followed from anywhere (``parity status``, ``logs``, ``wait``).

Attached (``--cluster`` alone), the driver is this process: a laptop's sleep or a dropped
port-forward loses the comparison. Submitted, the driver is a Ray Job that the cluster's
job manager runs on a node with a CPU (``ENTRYPOINT_CPUS``), so freezing the workload and
the fp64 reference run in the cluster and the comparison runs to its end whatever happens
to the submitter; its results land where ``--out`` says (a URL, or a path the nodes
share). The job carries this parity with it (``runtime_env``: the package's own sources
as a ``py_modules`` entry, and the versions it was submitted with, which the job checks on
each node it lands on: ``check_versions``). The runtime_env holds no secret: no
credential of this machine travels, each node reads its own (an instance role, its
environment), and every URL in it has passed ``parity.safety.urls``.

The job's id is the handle: ``status`` says where it stands, ``logs`` prints (or follows)
what the comparison printed, ``wait`` returns the comparison's own exit code once it ends
(Ray records it: ``JobInfo.driver_exit_code``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parity.errors import EXIT_INCONCLUSIVE, UsageError
from parity.safety.redact import redact
from parity.safety.urls import checked, safe_form

log = logging.getLogger("parity")

#: the job's environment: the versions it was submitted with (JSON), checked on its node
SUBMITTED_VAR = "PARITY_SUBMITTED"
#: what the job runs: ``parity submitted`` (``parity.cli.jobs``), the request beside it
ENTRY = "python -m parity submitted"
#: the CPUs the job's driver asks for: a node that can freeze the workload and compute
#: the fp64 reference (a team's head node has none)
ENTRYPOINT_CPUS = 1.0
#: the dashboard's port where none is given (Ray's default)
DASHBOARD_PORT = 8265
#: Ray's own variable for the Jobs API address (``ray job submit`` reads it too)
DASHBOARD_VAR = "RAY_API_SERVER_ADDRESS"
#: this parity's package directory: what the job carries to its nodes
PACKAGE = Path(__file__).resolve().parents[1]
#: seconds between polls while waiting for a job to end
POLL_S = 2.0
#: seconds to reach the dashboard before calling it unreachable
CONNECT_TIMEOUT_S = 10.0
#: what the job's id starts with (Ray's own submissions start ``raysubmit_``)
PREFIX = "parity-"
#: Ray's loggers that say at INFO what the job client uploads
QUIET = ("ray.dashboard.modules.dashboard_sdk", "ray._private.runtime_env.packaging")
#: metadata keys the job carries (shown by ``ray job list`` too; nothing secret)
OUT_KEY = "parity_out"


def dashboard_of(dashboard: str | None, cluster: str | None = None) -> str:
    """The Jobs API address: ``--dashboard``, else ``$RAY_API_SERVER_ADDRESS``, else port
    8265 of the ``--cluster`` host; one line naming the fix where none is known."""
    given = dashboard or os.environ.get(DASHBOARD_VAR, "").strip() or None
    if given is None and cluster and cluster.startswith("ray://"):
        host = cluster.split("://", 1)[1].rstrip("/").rsplit(":", 1)[0]
        given = f"http://{host}:{DASHBOARD_PORT}"
    if not given:
        raise UsageError(
            "no Ray dashboard to reach: give --dashboard http://HEAD:8265 (or set "
            f"{DASHBOARD_VAR}, or --cluster ray://HEAD:10001 for its port 8265)"
        )
    given = checked(given, "--dashboard", "http://HEAD:8265")
    if "://" not in given:
        given = f"http://{given}"
    if not given.startswith(("http://", "https://")):
        raise UsageError(f"--dashboard {safe_form(given)}: give http://HEAD:8265")
    return given.rstrip("/")


def client(dashboard: str) -> Any:
    """A Jobs client of the dashboard at ``dashboard``; UsageError where nothing answers
    or Ray's job support is missing."""
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise UsageError("--submit needs Ray's job client: pip install 'parity[cluster]'") from None
    for name in QUIET:  # each package uploaded, said at INFO: not the user's business
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        return JobSubmissionClient(dashboard, headers=None, verify=True)
    except Exception as exc:  # ConnectionError, RuntimeError: Ray's own wording
        raise UsageError(
            f"--dashboard {safe_form(dashboard)}: no Ray dashboard answers there "
            f"({_first(exc)}): start the head with its dashboard (ray start --head "
            "--include-dashboard=true) or fix the address"
        ) from None


def _first(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return redact(lines[0] if lines else type(exc).__name__)[:200]


def versions() -> dict[str, str]:
    """This process's parity and torch (what a job is submitted with, or a node runs)."""
    from parity.version import __version__

    found = {"parity": __version__}
    try:
        from importlib.metadata import version

        found["torch"] = version("torch")
    except Exception:  # no torch here: nothing to compare with
        pass
    return found


def release(version: str) -> str:
    """A torch version without its local part (``2.13.0+cu128`` -> ``2.13.0``): builds for
    two devices of one release differ only there."""
    return version.split("+", 1)[0]


def differences(ours: Mapping[str, str], theirs: Mapping[str, str], where: str) -> list[str]:
    """Why ``theirs`` (a node's versions) cannot run what ``ours`` asked: a parity that
    differs. A torch release that differs is a warning line, not a refusal (the sides'
    manifests record each torch; a device's own build differs in its local part only)."""
    problems = []
    if ours.get("parity") != theirs.get("parity"):
        problems.append(
            f"{where} runs parity {theirs.get('parity', '(none)')}, this one "
            f"{ours.get('parity')}: install parity {ours.get('parity')} there (the images in "
            "deploy/ pin it)"
        )
    return problems


def torch_note(ours: Mapping[str, str], theirs: Mapping[str, str], where: str) -> str | None:
    """A line where ``where`` runs another torch release than this process."""
    a, b = ours.get("torch"), theirs.get("torch")
    if a and b and release(a) != release(b):
        return (
            f"{where} runs torch {b}, the driver (which froze the workload and computed the "
            f"fp64 reference) torch {a}"
        )
    return None


def check_versions() -> None:
    """In a submitted job: this node runs the parity the job was submitted with (else
    UsageError, the comparison's exit code 2); another torch release is said."""
    said = os.environ.get(SUBMITTED_VAR)
    if not said:
        return
    try:
        submitted = json.loads(said)
    except ValueError:
        return
    import socket

    here = versions()
    where = f"the job's node {socket.gethostname()}"
    problems = differences(submitted, here, where)
    if problems:
        raise UsageError(problems[0])
    note = torch_note(submitted, here, where)
    if note:
        log.warning("parity: the submitter ran another torch: %s", note.replace("driver", "job"))


@dataclass(frozen=True)
class Submission:
    """What a submitted job needs besides the request in ``workdir``: where its results
    land (shown as given: a URL already checked) and the index it writes to."""

    workdir: Path
    out: str
    name: str
    #: the index the job writes to (a URL without a password), or None: the node's own
    store: str | None = None


def runtime_env(sub: Submission) -> dict[str, Any]:
    """The job's runtime_env: this parity's sources, the request's directory, and the
    versions to check; nothing from this machine's environment."""
    env = {SUBMITTED_VAR: json.dumps(versions(), sort_keys=True)}
    if sub.store is not None:
        env["PARITY_STORE"] = sub.store
    return {
        "working_dir": str(sub.workdir),
        "py_modules": [str(PACKAGE)],
        "excludes": ["__pycache__", "*.pyc"],
        "env_vars": env,
    }


def submit(dashboard: str, sub: Submission) -> str:
    """The comparison in ``sub.workdir`` submitted as a Ray Job; its id."""
    jobs = client(dashboard)
    name = re.sub(r"[^a-z0-9]+", "-", sub.name.lower()).strip("-")[:40] or "compare"
    job_id = f"{PREFIX}{name}-{uuid.uuid4().hex[:8]}"
    try:
        return str(
            jobs.submit_job(
                entrypoint=ENTRY,
                submission_id=job_id,
                runtime_env=runtime_env(sub),
                metadata={OUT_KEY: sub.out, "parity_version": versions()["parity"]},
                entrypoint_num_cpus=ENTRYPOINT_CPUS,
            )
        )
    except Exception as exc:
        raise UsageError(
            f"--dashboard {safe_form(dashboard)}: the job was not accepted ({_first(exc)}): "
            "check that the cluster's Ray matches this one's"
        ) from None


def info(jobs: Any, job_id: str) -> Any:
    """Ray's ``JobInfo`` of ``job_id``; UsageError for an id the cluster does not know."""
    try:
        return jobs.get_job_info(job_id)
    except Exception as exc:
        text = str(exc)
        if "404" in text or "does not exist" in text:
            raise UsageError(
                f"no job {job_id!r} on this cluster: give the id parity compare --submit "
                "printed (ray job list shows them)"
            ) from None
        raise UsageError(f"job {job_id!r}: the dashboard did not answer ({_first(exc)})") from None


def describe(job_id: str, found: Any) -> str:
    """One line: the job's state, where its results land and, once it ended, how."""
    status = str(getattr(found.status, "value", found.status))
    out = (found.metadata or {}).get(OUT_KEY)
    line = f"{job_id}: {status}"
    if found.start_time:
        start = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(found.start_time / 1000))
        line += f" (started {start})"
    if found.driver_exit_code is not None and found.status.is_terminal():
        line += f", exit code {found.driver_exit_code}"
    elif found.status.is_terminal() and found.message:
        line += f": {redact(found.message.splitlines()[0])[:200]}"
    if out:
        line += f"; results: {out}"
    return line


def logs(jobs: Any, job_id: str, write: Callable[[str], None], *, follow: bool) -> None:
    """What the job printed so far, or (``follow``) as it prints until it ends."""
    info(jobs, job_id)  # an unknown id: one line, not Ray's traceback
    if not follow:
        write(jobs.get_job_logs(job_id))
        return
    import asyncio

    async def tail() -> None:
        async for chunk in jobs.tail_job_logs(job_id):
            write(chunk)

    asyncio.run(tail())


def wait(jobs: Any, job_id: str, *, poll_s: float = POLL_S) -> tuple[int, Any]:
    """Wait for the job to end: the comparison's exit code (3, inconclusive, where the
    job ended without one: stopped, or its driver's node lost) and its ``JobInfo``."""
    while True:
        found = info(jobs, job_id)
        if found.status.is_terminal():
            break
        time.sleep(poll_s)
    code = found.driver_exit_code
    if code is None or not 0 <= int(code) <= 4:
        return EXIT_INCONCLUSIVE, found
    return int(code), found
