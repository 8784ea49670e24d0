"""The driver's side of a cluster comparison: one actor per side on a node with its
resource, jobs sent to it in the order the rounds ask (so they stay interleaved across
the two nodes), and each bundle it sends back written here under its final name."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from parity.bundle import finalize, repeat_name, temp_dir_for, write_doc
from parity.cluster import capacity, jobs
from parity.cluster.address import connect, resource_for
from parity.cluster.code import user_code
from parity.cluster.node import SideNode, files_of, write_files
from parity.errors import DeviceError, UsageError
from parity.model.codec import decode, dumps, loads
from parity.model.job import JOB_FILE, CheckpointPlan, Event, Job
from parity.model.placement import ClusterPlan, NodeLost, Placement, Resource
from parity.model.spec import SideSpec, WorkloadSpec
from parity.plugins import is_file_workload
from parity.safety.redact import redact

log = logging.getLogger("parity")
#: seconds for a side's actor to start on its node before the side is given up
START_TIMEOUT_S = 120.0
#: seconds beyond a job's own timeout for the bundle to come back
SLACK_S = 120.0
#: seconds between asks for a running job's events (its progress on the driver)
PROGRESS_EVERY_S = 1.0


def _options(res: Resource) -> dict[str, float | dict[str, float]]:
    """Ray's scheduling options for an actor that holds ``res`` on its node."""
    if res.name == "CPU":
        return {"num_cpus": res.amount}
    if res.name == "GPU":
        return {"num_cpus": 0, "num_gpus": res.amount}
    return {"num_cpus": 0, "resources": {res.name: res.amount}}


@dataclass
class RemoteSide:
    """A side's pool on the cluster: taken (reserved, its actor started) when its first
    job is due, given back after its last (``release``), and taken again on another node
    where its node is lost mid-job (``ClusterPlan.node_retries`` times)."""

    ray: Any
    actor_class: Any
    role: str
    resource: Resource
    plan: ClusterPlan
    shipped: dict[str, Any] = field(default_factory=dict)
    #: a user's workload file's sources in the object store, for a node that does not
    #: share this machine's files (``parity.cluster.code``)
    code: Any = None
    #: the side it runs, checked on each node it is given (``SideNode.check``)
    side: SideSpec | None = None
    actor: Any = None
    group: Any = None
    placement: Placement | None = None
    #: the infrastructure events so far (nodes lost), each a line for the verdict
    notes: list[str] = field(default_factory=list)
    retries_left: int = 0

    def __post_init__(self) -> None:
        self.retries_left = self.plan.node_retries

    def reserve(self) -> None:
        """The side's pool, waited for (``capacity.reserve``), unless already reserved."""
        if self.group is None:
            self.group = capacity.reserve(self.ray, self.role, self.resource, self.plan.wait_s)

    def take(self) -> Placement:
        """The side's pool, waited for (``capacity.reserve``) and its actor started on
        it, unless already held; where it runs."""
        if self.actor is None or self.placement is None:
            self.reserve()
            try:
                self.actor, self.placement = _start_one(
                    self.ray, self.actor_class, self.role, self.resource, self.plan, self.group
                )
                self._check_device()
            except BaseException:
                self.release()
                raise
        return self.placement

    def _check_versions(self) -> None:
        """The node runs this parity (else UsageError naming the node); another torch
        release than the driver's is noted for the verdict, once per node."""
        assert self.placement is not None
        theirs = self.ray.get(self.actor.versions.remote(), timeout=START_TIMEOUT_S)
        where = f"the {self.role}'s node {self.placement.hostname}"
        problems = jobs.differences(jobs.versions(), theirs, where)
        if problems:
            raise UsageError(problems[0])
        note = jobs.torch_note(jobs.versions(), theirs, where)
        if note and note not in self.notes:
            log.warning("parity: %s", note)
            self.notes.append(note)

    def _check_device(self) -> None:
        """The side's device on the node it was given, before any job of either side
        runs there: a node without it is bad placement (DeviceError naming the node)."""
        self._check_versions()
        if self.side is None or self.placement is None:
            return
        said = self.ray.get(self.actor.check.remote(str(self.side)), timeout=START_TIMEOUT_S)
        if said is not None:
            where = self.placement
            raise DeviceError(
                f"--place {self.role}={self.resource}: on node {where.hostname} "
                f"({where.node_id[:12]}): {said}"
            )

    def run(self, job: Job, final: Path, on_event: Callable[[Event], None] | None) -> Path:
        """The job on the side's node; its bundle at ``final``. A node lost while it runs
        is an infrastructure event: the job runs again on another node with the resource
        while retries are left, else its bundle is a failed one with the reason."""
        lost: list[NodeLost] = []
        while True:
            placement = self.take()
            tmp = temp_dir_for(final)
            try:
                files, saved = self._send(job, placement, lost, on_event)
            except Exception as exc:  # RayActorError, NodeDiedError, GetTimeoutError ...
                event = NodeLost(
                    node_id=placement.node_id, hostname=placement.hostname, reason=_first(exc)
                )
                if self.retries_left <= 0:
                    return self._lost(job, tmp, final, event)
                shutil.rmtree(tmp, ignore_errors=True)
                self.retries_left -= 1
                lost.append(event)
                self._note(job, event)
                self.release()
                continue
            break
        plan = job.plan
        if (
            saved and isinstance(plan, CheckpointPlan) and plan.checkpoint_dir
        ):  # where the check reads it
            _keep_checkpoint(Path(plan.checkpoint_dir), saved)
        write_files(tmp, files)
        os.replace(tmp, final)
        return final

    def _send(
        self,
        job: Job,
        placement: Placement,
        lost: list[NodeLost],
        on_event: Callable[[Event], None] | None,
    ) -> tuple[dict[str, bytes], dict[str, bytes]]:
        frozen = None
        if job.frozen is not None:
            if job.frozen not in self.shipped:
                self.shipped[job.frozen] = self.ray.put(files_of(Path(job.frozen)))
            frozen = self.shipped[job.frozen]
        code = self.code if is_file_workload(job.workload.name) else None
        plan = job.plan
        resumes = (
            files_of(Path(plan.resume_from))
            if isinstance(plan, CheckpointPlan) and plan.resume_from
            else None
        )
        where = dumps(replace(placement, lost=tuple(lost) or None), indent=None)
        ref = self.actor.run.remote(dumps(job, indent=None), frozen, code, resumes, where)
        deadline = time.monotonic() + job.timeout_s + SLACK_S
        relayed = 0
        while True:  # the job's events relayed as it runs, not when it ends
            ready, _ = self.ray.wait([ref], timeout=PROGRESS_EVERY_S)
            if on_event is not None:
                said = self.ray.get(self.actor.events.remote(relayed), timeout=SLACK_S)
                relayed += _relay(said, on_event)
            if ready:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"no bundle within {job.timeout_s + SLACK_S:g} s")
        files, saved = self.ray.get(ref)
        return files, saved

    def _note(self, job: Job, event: NodeLost) -> None:
        line = (
            f"infrastructure: the {self.role}'s node {event.hostname} ({event.node_id[:12]}) "
            f"was lost while {_label(job)} ran ({event.reason}); it ran again on another node "
            f"with {self.resource} (--node-retries {self.plan.node_retries})"
        )
        log.warning("parity: %s", line)
        self.notes.append(line)

    def _lost(self, job: Job, tmp: Path, final: Path, event: NodeLost) -> Path:
        from parity.runner.failure import write_failed

        reason = (
            f"the side's cluster node {event.hostname} ({event.node_id[:12]}) was lost while "
            f"it ran: {event.reason}"
        )
        if self.plan.node_retries:
            reason += f" (after {self.plan.node_retries} retries on another node: --node-retries)"
        self.release()
        write_doc(tmp / JOB_FILE, job)
        write_failed(tmp, job, reason)
        return finalize(tmp, final).path

    def release(self) -> None:
        """Give the side's pool back: its actor ended, its reservation withdrawn."""
        actor, group = self.actor, self.group
        self.actor = self.group = self.placement = None
        if actor is not None:
            with contextlib.suppress(Exception):
                self.ray.get(actor.close.remote(), timeout=30)
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
        if group is not None:
            capacity.release(group)

    close = release


def take_together(sides: Sequence[RemoteSide]) -> list[Placement]:
    """Every side's pool taken, none held while another is waited for: where more than
    one is due, the cluster's capacity for all of them is waited for first
    (``capacity.wait_together``), then each is reserved (at once) and its actor started,
    the sides in parallel."""
    due = [side for side in sides if side.group is None]
    if len(due) > 1:
        wanted = [(side.role, side.resource) for side in due]
        capacity.wait_together(due[0].ray, wanted, max(side.plan.wait_s for side in due))
        for side in due:
            side.reserve()
    with ThreadPoolExecutor(len(sides)) as pool:
        return list(pool.map(lambda side: side.take(), sides))


def _relay(lines: list[str], on_event: Callable[[Event], None]) -> int:
    """Each event line to ``on_event``; how many lines there were."""
    for line in lines:
        try:
            on_event(decode(Event, loads(line)))
        except ValueError:
            continue
    return len(lines)


def _first(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"{type(exc).__name__}: {redact(first)[:300]}"


def _label(job: Job) -> str:
    return f"its {job.mode} job {repeat_name(job.repeat)}"


def _keep_checkpoint(final: Path, files: dict[str, bytes]) -> None:
    """A checkpoint a node saved, here under its final name (written beside it, then
    renamed into place, as a checkpoint always is)."""
    tmp = temp_dir_for(final)
    write_files(tmp, files)
    os.replace(tmp, final)


def start(
    plan: ClusterPlan, sides: Mapping[str, SideSpec], workload: WorkloadSpec | None = None
) -> dict[str, RemoteSide]:
    """Reach the cluster and put a user's workload file's sources in its object store:
    each side's pool is taken when its first job is due (``RemoteSide.take``)."""
    wanted = {role: resource_for(side, plan, role) for role, side in sides.items()}
    files = user_code(workload) if workload is not None else None
    ray = connect(plan.address)
    actor_class = ray.remote(SideNode)
    code = ray.put(files) if files is not None else None
    return {
        role: RemoteSide(
            ray=ray,
            actor_class=actor_class,
            role=role,
            resource=res,
            plan=plan,
            code=code,
            side=sides[role],
        )
        for role, res in wanted.items()
    }


def _start_one(
    ray: Any, actor_class: Any, role: str, res: Resource, plan: ClusterPlan, group: Any
) -> tuple[Any, Placement]:
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    runtime = {"env_vars": {"PARITY_CLUSTER_ROLE": role}}
    strategy = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0)
    actor = actor_class.options(
        **_options(res), max_restarts=0, max_concurrency=2, runtime_env=runtime,
        scheduling_strategy=strategy,
    ).remote(str(res), redact(plan.address))  # fmt: skip
    try:
        placement = decode(Placement, loads(ray.get(actor.where.remote(), timeout=START_TIMEOUT_S)))
    except Exception as exc:
        ray.kill(actor)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(
            f"--place {role}={res}: the side could not start on a node with it within "
            f"{START_TIMEOUT_S:g} s ({redact(first)[:200]}): check the cluster's free resources"
        ) from None
    return actor, placement
