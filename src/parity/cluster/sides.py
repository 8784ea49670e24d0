"""The driver's side of a cluster comparison: one actor per side on a node with its
resource, jobs sent to it in the order the rounds ask (so they stay interleaved across
the two nodes), and each bundle it sends back written here under its final name."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.bundle import finalize, temp_dir_for, write_doc
from parity.cluster.address import check_resources, connect, resource_for
from parity.cluster.code import user_code
from parity.cluster.node import SideNode, files_of, write_files
from parity.errors import UsageError
from parity.model.codec import decode, dumps, loads
from parity.model.job import EVENTS_FILE, JOB_FILE, Event, Job
from parity.model.placement import ClusterPlan, Placement, Resource
from parity.model.spec import SideSpec, WorkloadSpec
from parity.plugins import is_file_workload
from parity.redact import redact

#: seconds for a side's actor to start on its node before the side is given up
START_TIMEOUT_S = 120.0
#: seconds beyond a job's own timeout for the bundle to come back
SLACK_S = 120.0


def _options(res: Resource) -> dict[str, float | dict[str, float]]:
    """Ray's scheduling options for an actor that holds ``res`` on its node."""
    if res.name == "CPU":
        return {"num_cpus": res.amount}
    if res.name == "GPU":
        return {"num_cpus": 0, "num_gpus": res.amount}
    return {"num_cpus": 0, "resources": {res.name: res.amount}}


@dataclass
class RemoteSide:
    """A side's actor, and the frozen workloads already in the object store."""

    ray: Any
    actor: Any
    placement: Placement
    shipped: dict[str, Any] = field(default_factory=dict)
    #: a user's workload file's sources in the object store, for a node that does not
    #: share this machine's files (``parity.cluster.code``)
    code: Any = None

    def run(self, job: Job, final: Path, on_event: Callable[[Event], None] | None) -> Path:
        """The job on the side's node; its bundle at ``final`` (a failed one with the
        reason when the node or the actor is lost)."""
        frozen = None
        if job.frozen is not None:
            if job.frozen not in self.shipped:
                self.shipped[job.frozen] = self.ray.put(files_of(Path(job.frozen)))
            frozen = self.shipped[job.frozen]
        code = self.code if is_file_workload(job.workload.name) else None
        plan = job.checkpoint
        resumes = files_of(Path(plan.resume_from)) if plan and plan.resume_from else None
        tmp = temp_dir_for(final)
        try:
            ref = self.actor.run.remote(dumps(job, indent=None), frozen, code, resumes)
            files, saved = self.ray.get(ref, timeout=job.timeout_s + SLACK_S)
        except Exception as exc:  # RayActorError, NodeDiedError, GetTimeoutError ...
            return self._lost(job, tmp, final, exc)
        if saved and plan is not None and plan.checkpoint_dir:  # where the check reads it
            _keep_checkpoint(Path(plan.checkpoint_dir), saved)
        write_files(tmp, files)
        if on_event is not None:
            for line in (tmp / EVENTS_FILE).read_text().splitlines() if files else []:
                try:
                    on_event(decode(Event, loads(line)))
                except ValueError:
                    continue
        os.replace(tmp, final)
        return final

    def _lost(self, job: Job, tmp: Path, final: Path, exc: BaseException) -> Path:
        from parity.runner.failure import write_failed

        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        reason = (
            f"the side's cluster node {self.placement.hostname} "
            f"({self.placement.node_id[:12]}) was lost while it ran: "
            f"{type(exc).__name__}: {redact(first)[:300]}"
        )
        write_doc(tmp / JOB_FILE, job)
        write_failed(tmp, job, reason)
        return finalize(tmp, final).path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ray.get(self.actor.close.remote(), timeout=30)
        with contextlib.suppress(Exception):
            self.ray.kill(self.actor)


def _keep_checkpoint(final: Path, files: dict[str, bytes]) -> None:
    """A checkpoint a node saved, here under its final name (written beside it, then
    renamed into place, as a checkpoint always is)."""
    tmp = temp_dir_for(final)
    write_files(tmp, files)
    os.replace(tmp, final)


def start(
    plan: ClusterPlan, sides: Mapping[str, SideSpec], workload: WorkloadSpec | None = None
) -> dict[str, RemoteSide]:
    """Reach the cluster, check that some node offers each side's resource, and start
    each side's actor on such a node, with a user's workload file's sources in the object
    store: all before any job runs."""
    wanted = {role: resource_for(side, plan, role) for role, side in sides.items()}
    files = user_code(workload) if workload is not None else None
    ray = connect(plan.address)
    check_resources(ray, wanted)
    actor_class = ray.remote(SideNode)
    code = ray.put(files) if files is not None else None
    started: dict[str, RemoteSide] = {}
    try:
        for role, res in wanted.items():
            started[role] = _start_one(ray, actor_class, role, res, plan.address)
            started[role].code = code
    except BaseException:
        for side in started.values():
            side.close()
        raise
    return started


def _start_one(ray: Any, actor_class: Any, role: str, res: Resource, cluster: str) -> RemoteSide:
    runtime = {"env_vars": {"PARITY_CLUSTER_ROLE": role}}
    actor = actor_class.options(
        **_options(res), max_restarts=0, max_concurrency=1, runtime_env=runtime
    ).remote(str(res), redact(cluster))
    try:
        placement = decode(Placement, loads(ray.get(actor.where.remote(), timeout=START_TIMEOUT_S)))
    except Exception as exc:
        ray.kill(actor)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(
            f"--place {role}={res}: the side could not start on a node with it within "
            f"{START_TIMEOUT_S:g} s ({redact(first)[:200]}): check the cluster's free resources"
        ) from None
    return RemoteSide(ray=ray, actor=actor, placement=placement)
