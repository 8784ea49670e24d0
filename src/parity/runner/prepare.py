"""Set-up in a worker: the pre-flight of a command's sides, and preparing its workload.

User code never runs in the parent, and neither does torch: both steps are ``freeze`` jobs
(``parity.runner.modes.freeze``) forked from the zygote like any job, and the parent reads
only what their bundles say. Each job's bundle lives in the system's temporary directory
and is removed, so that a side or a workload refused leaves nothing where parity writes.

``preflight`` is the one pre-flight of every command that takes a side (``compare`` and
``run`` with a workload or a script, ``scan``, ``scale``, the checks, each cell of a
``sweep``): it asks ``parity.devices.preflight`` whether each side can run here (the
device and its index, the compile backend, the thread count) and turns the first that
cannot into a ``DeviceError`` (exit code 2, one line with the fix), before any output
directory or bundle exists. A side refused once is refused again by the same process
without a worker (``refused_before``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from parity.errors import DeviceError, ParityError, SideError, WorkloadError
from parity.model.codec import encode
from parity.model.job import Job, PreparePlan
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.workload import (
    FingerprintParts,
    PreparedWorkload,
    QualitySpec,
    WorkloadDescription,
    sha256_json,
)
from parity.runner.strategy import Launch
from parity.safety import scratch

log = logging.getLogger("parity")
#: the workload spec a pre-flight job carries (it resolves no workload)
PREFLIGHT_SPEC = WorkloadSpec(name="preflight")

#: the refusals of this process, by side and the plugins it was asked with: what devices,
#: compile backends and cores a machine has does not change under a running process, so
#: a side refused once is refused again at once, without a worker (a sweep's next cell,
#: an API caller's next command)
_REFUSED: dict[tuple[SideSpec, str], str] = {}


def _key(side: SideSpec) -> tuple[SideSpec, str]:
    from parity.plugins import ENV_VAR

    return side, os.environ.get(ENV_VAR, "")


def refused_before(sides: Iterable[SideSpec]) -> DeviceError | None:
    """The refusal this process already had for one of ``sides``, if any."""
    for side in sides:
        said = _REFUSED.get(_key(side))
        if said is not None:
            return DeviceError(said)
    return None


def _remember(sides: Iterable[SideSpec], refused: DeviceError) -> None:
    """Keep a pre-flight's refusal for the one side it names (the worker's words are
    ``side SPEC cannot run here: ...``, ``runner.modes.freeze``)."""
    said = str(refused)
    named = [s for s in sides if said.startswith(f"side {s} cannot run here:")]
    if len(named) == 1:
        _REFUSED[_key(named[0])] = said


def prepare_job(
    spec: WorkloadSpec,
    *,
    freeze: bool = True,
    timeout_s: float = 900.0,
    sides: tuple[SideSpec, ...] = (),
    cost: bool = False,
    resolve: bool = True,
) -> Job:
    """A ``freeze`` job for a spec (``sides``: checked first; ``resolve=False``: only
    that). Until the worker has resolved it the parent knows only the spec, so the job's
    description and parts are the spec's own (the bundle of this job is read for
    ``prepared.json`` and removed)."""
    description = WorkloadDescription(
        name=spec.name, kind="train", size=spec.size, quality=QualitySpec(kind="train", checks=())
    )
    parts = FingerprintParts(
        config=sha256_json(encode(spec)),
        weights=None,
        data=None,
        batch_size=spec.batch_size,
        seq_len=spec.seq_len,
        steps=spec.steps,
        seed=spec.seed,
        quality=sha256_json([]),
    )
    return Job(
        role="prepare",
        side=SideSpec(device="cpu"),
        workload=spec,
        frozen=None,
        fingerprint=parts.digest(),
        parts=parts,
        description=description,
        plan=PreparePlan(freeze=freeze, sides=sides, cost=cost, resolve=resolve),
        timeout_s=timeout_s,
    )


def preflight(
    sides: Iterable[SideSpec],
    *,
    launcher: Launch,
    workload: WorkloadSpec | None = None,
    cluster: object | None = None,
    timeout_s: float = 300.0,
) -> None:
    """Refuse, with one ``DeviceError``, a side this machine cannot run: every command
    that takes a side calls this before it writes anything. Sides placed on a cluster
    (``cluster``) run on their nodes, which this machine need not be: not checked here.
    ``workload`` (never resolved here) only names the job, so that the zygote it starts
    preloads what that workload's jobs after it need."""
    unique = tuple(dict.fromkeys(sides))
    if not unique or cluster is not None:
        return
    known = refused_before(unique)
    if known is not None:
        raise known
    spec = workload or PREFLIGHT_SPEC
    job = prepare_job(spec, timeout_s=timeout_s, sides=unique, resolve=False)
    where = scratch.make("preflight")
    try:
        bundle = launcher.run(job, where / "job")
    finally:
        scratch.remove(where)
    if not bundle.ok:
        reason = bundle.manifest.reason or "the worker did not say why"
        refused = _device_error(reason)
        if refused is not None:
            _remember(unique, refused)
            raise refused
        listed = ", ".join(str(s) for s in unique)
        raise SideError(f"the pre-flight of {listed} could not run: {reason}")


def prepare_workload(
    spec: WorkloadSpec,
    *,
    launcher: Launch,
    freeze: bool = True,
    timeout_s: float = 900.0,
    cost: bool = False,
    sides: Iterable[SideSpec] = (),
    cluster: object | None = None,
) -> PreparedWorkload:
    """Resolve (and with ``freeze`` freeze) a workload in a worker started like any job;
    the parent learns only what its ``prepared.json`` says. ``sides`` are pre-flighted in
    that job first, as :func:`preflight` would in a job of its own (none where placed on
    a ``cluster``): a side this machine cannot run is one ``DeviceError``. A workload that cannot be
    made (a file that exits or raises when imported, a factory that raises, a size that
    does not exist) is one ``WorkloadError`` line; a worker killed or out of time, a
    ``SideError``. Warnings (a cache entry rebuilt) are logged. Its events are not shown:
    bad input must end in one line, and a workload is prepared before anything else."""
    checked = () if cluster is not None else tuple(dict.fromkeys(sides))
    known = refused_before(checked)
    if known is not None:
        raise known
    where = scratch.make("prepare")
    try:
        job = prepare_job(spec, freeze=freeze, timeout_s=timeout_s, cost=cost, sides=checked)
        bundle = launcher.run(job, where / "job")
        if not bundle.ok or bundle.prepared is None:
            failed = _not_prepared(spec, bundle.manifest.reason or "the worker did not say why")
            if isinstance(failed, DeviceError):
                _remember(checked, failed)
            raise failed
        prepared = bundle.prepared
    finally:
        scratch.remove(where)
    for warning in prepared.warnings:
        log.warning("parity: %s", warning)
    return prepared


def _device_error(reason: str) -> DeviceError | None:
    """The pre-flight's own refusal, where a job failed on a side it cannot run."""
    prefix, _, rest = reason.partition(": ")
    return DeviceError(rest) if prefix.startswith("DeviceError in phase") else None


def _not_prepared(spec: WorkloadSpec, reason: str) -> ParityError:
    """Why a workload could not be prepared, as the error the CLI prints in one line."""
    refused = _device_error(reason)
    if refused is not None:
        return refused
    if reason.startswith(("timed out", "the worker was killed")):
        return SideError(f"workload {spec.name} could not be prepared: {reason}")
    if reason.startswith("the worker exited"):
        reason += ": does the workload's code call exit() or os._exit() when imported?"
    prefix, _, rest = reason.partition(": ")
    if prefix.startswith("WorkloadError in phase"):  # the registry's own words suffice
        return WorkloadError(rest)
    return WorkloadError(f"workload {spec.name} could not be prepared: {reason}")
