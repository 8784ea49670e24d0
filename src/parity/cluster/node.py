"""What runs on a cluster node: one actor per side, which runs the side's jobs there with
the launcher a single machine uses (a zygote and forked repeats, or spawned jobs), and
sends each finished bundle back as its files (their digests travel with them)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import urllib.request
import uuid
from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from pathlib import Path

from parity.cluster.code import digest
from parity.model.codec import decode, dumps, loads
from parity.model.job import CheckpointPlan, Job
from parity.model.placement import Placement
from parity.probes.environment import PLACEMENT_VAR

#: seconds a cloud metadata service has to answer (absent otherwise)
METADATA_TIMEOUT_S = 0.3
AWS = "http://169.254.169.254/latest"
GCP = "http://metadata.google.internal/computeMetadata/v1/instance"


def _get(url: str, headers: dict[str, str], method: str = "GET") -> str | None:
    try:
        request = urllib.request.Request(url, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=METADATA_TIMEOUT_S) as r:
            return str(r.read().decode().strip()) or None
    except (OSError, ValueError):
        return None


def cloud_instance() -> tuple[str | None, str | None]:
    """(instance type, zone) from AWS's (IMDSv2) or Google's metadata service; (None,
    None) where neither answers within ``METADATA_TIMEOUT_S``."""
    token = _get(f"{AWS}/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "60"}, method="PUT")
    if token:
        auth = {"X-aws-ec2-metadata-token": token}
        return (
            _get(f"{AWS}/meta-data/instance-type", auth),
            _get(f"{AWS}/meta-data/placement/availability-zone", auth),
        )
    google = {"Metadata-Flavor": "Google"}
    kind = _get(f"{GCP}/machine-type", google)
    if kind:
        return kind.rsplit("/", 1)[-1], (_get(f"{GCP}/zone", google) or "").rsplit("/", 1)[-1]
    return None, None


def files_of(tree: Path) -> dict[str, bytes]:
    return {
        p.relative_to(tree).as_posix(): p.read_bytes()
        for p in sorted(tree.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def write_files(tree: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        if rel.startswith("/") or ".." in rel.split("/"):
            raise ValueError(f"{rel!r} is outside the directory")
        target = tree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def materialise(work: Path, files: dict[str, bytes]) -> Path:
    """A user's workload file's sources (``parity.cluster.code``) written under ``work``,
    once per content: their directory (the worker imports the file from it, ``Job.home``)."""
    home = work / "code" / digest(files)[:16]
    if not home.is_dir():
        tmp = home.with_name(f".{home.name}.tmp")
        write_files(tmp, files)
        tmp.rename(home)
    return home


#: the thread variables Ray sets on a worker from the CPUs its actor asks for
RAY_THREAD_VARS = ("OMP_NUM_THREADS",)


def ray_thread_vars(
    environ: Mapping[str, str], started: Path = Path("/proc/self/environ")
) -> dict[str, str]:
    """The thread variables in this Ray worker's environment that Ray set itself in the
    process (``ray._private.utils.set_omp_num_threads_if_unset``, as an actor's creation
    task starts), not the node: those the environment the process started with (``started``:
    the node's, with the runtime environment's variables) lacks. Off Linux, none."""
    try:
        raw = started.read_bytes()
    except OSError:
        return {}
    node = {item.split(b"=", 1)[0].decode(errors="replace") for item in raw.split(b"\0") if item}
    return {k: environ[k] for k in RAY_THREAD_VARS if k in environ and k not in node}


def local_threads(
    environ: MutableMapping[str, str], started: Path = Path("/proc/self/environ")
) -> dict[str, str]:
    """Remove from this actor's environment (which its side's processes inherit) the
    thread variables Ray set, so they run with the threads a local run on this node has;
    returns what was removed, for the manifest (``Placement.unset``)."""
    forced = ray_thread_vars(environ, started)
    for name in forced:
        environ.pop(name, None)
    return forced


class SideNode:
    """A side's home on one node (the body of a Ray actor): its work directory, its
    launcher, the frozen workloads it was sent, and where it is."""

    def __init__(self, resource: str, cluster: str, node_id: str | None = None) -> None:
        from parity.runner.launch import Launcher

        unset: dict[str, str] = {}
        if node_id is None:  # in a Ray actor: the node it was placed on
            import ray

            node_id = str(ray.get_runtime_context().get_node_id())
            unset = local_threads(os.environ)
        self.work = Path(tempfile.mkdtemp(prefix="parity-side-"))
        self.launcher = Launcher()
        self.frozen: dict[str, Path] = {}
        #: the running job's events so far, as JSON lines (``events``)
        self.seen: list[str] = []
        instance, zone = cloud_instance()
        self.placement = Placement(
            node_id=node_id,
            hostname=socket.gethostname(),
            resource=resource,
            cluster=cluster,
            instance_type=instance,
            zone=zone or None,
            unset=unset or None,
        )

    def where(self) -> str:
        return dumps(self.placement, indent=None)

    def versions(self) -> dict[str, str]:
        """The parity and torch this node's processes run (``jobs.versions``)."""
        from parity.cluster.jobs import versions

        return versions()

    def run(
        self,
        job_text: str,
        frozen: dict[str, bytes] | None,
        code: dict[str, bytes] | None = None,
        checkpoint: dict[str, bytes] | None = None,
        where: str | None = None,
    ) -> tuple[dict[str, bytes], dict[str, bytes]]:
        """One job into a bundle here, with the frozen workload, a user's workload file's
        sources and the checkpoint it resumes from (each as files); returns the bundle's
        files and those of the checkpoint it saved (none where it saved none). ``where``:
        the placement its manifest records (this node's, with the nodes lost before)."""
        from parity.runner.launch import run_job

        job = decode(Job, loads(job_text))
        if job.frozen is not None and frozen is not None:
            if job.frozen not in self.frozen:
                local = self.work / "frozen" / uuid.uuid4().hex[:12] / Path(job.frozen).name
                write_files(local, frozen)
                self.frozen[job.frozen] = local
            job = replace(job, frozen=str(self.frozen[job.frozen]))
        if code is not None:
            job = replace(job, home=str(materialise(self.work, code)))
        job = self._checkpoints_here(job, checkpoint)
        final = self.work / "bundles" / uuid.uuid4().hex[:12]
        env = {PLACEMENT_VAR: json.dumps(json.loads(where or self.where()))}
        self.seen = []
        run_job(
            job, final, env=env, launcher=self.launcher,
            on_event=lambda event: self.seen.append(dumps(event, indent=None)),
        )  # fmt: skip
        saved = job.plan.checkpoint_dir if isinstance(job.plan, CheckpointPlan) else None
        try:
            return files_of(final), files_of(Path(saved)) if saved else {}
        finally:
            shutil.rmtree(final, ignore_errors=True)
            if saved:
                shutil.rmtree(Path(saved).parents[1], ignore_errors=True)

    def check(self, side: str) -> str | None:
        """The side's device checked here, on its node, as the pre-flight checks a local
        side (``parity.runner.prepare.preflight``): why it cannot run, or None."""
        from parity.errors import DeviceError, SideError
        from parity.model.spec import parse_side
        from parity.runner.prepare import preflight

        try:
            preflight([parse_side(side)], launcher=self.launcher)
        except (DeviceError, SideError) as exc:
            return str(exc)
        return None

    def events(self, start: int) -> list[str]:
        """The running job's events from the ``start``-th on, for the driver's progress
        while the job runs (the actor serves this beside ``run``)."""
        return self.seen[start:]

    def _checkpoints_here(self, job: Job, checkpoint: dict[str, bytes] | None) -> Job:
        """The job's checkpoint directories on this node: the one it resumes from written
        from ``checkpoint``, the one it saves into new (the driver keeps both)."""
        plan = job.plan
        if not isinstance(plan, CheckpointPlan) or not (plan.checkpoint_dir or plan.resume_from):
            return job
        here = self.work / "checkpoints" / uuid.uuid4().hex[:12]
        if plan.resume_from and checkpoint is not None:
            write_files(here / "from", checkpoint)
            plan = replace(plan, resume_from=str(here / "from"))
        if plan.checkpoint_dir:
            plan = replace(plan, checkpoint_dir=str(here / "saved" / "checkpoint"))
        return replace(job, plan=plan)

    def close(self) -> None:
        self.launcher.close()
        shutil.rmtree(self.work, ignore_errors=True)
