"""``freeze``: a workload spec resolved and frozen for the parent, in a worker.

A user's workload file (or a plugin's, or a checkpoint's code) is imported only in a
worker process: the parent asks for a ``freeze`` job (forked from the zygote like any
job), and this mode resolves the spec, freezes the workload into the cache (verifying a
cached copy by content, rebuilding it with a warning where it differs) and writes
``prepared.json``: the frozen directory, fingerprint, parts and description (and, for a
comparison, a step timed on the CPU for the pre-run estimate). First it
checks that each side of the command can run here (a ``DeviceError``, exit code 2,
before anything is written: ``parity.devices.preflight``); a pre-flight job
(``parity.runner.prepare.preflight``) does only that. A file that
exits when imported, or a factory that raises, ends this job as failed, which the parent
turns into one ``WorkloadError`` line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, ClassVar

from parity.bundle import PREPARED
from parity.model.job import Mode as ModeName
from parity.model.job import PreparePlan
from parity.model.workload import PreparedWorkload
from parity.runner.modes.base import Mode
from parity.runner.session import SideSession

if TYPE_CHECKING:
    from parity.errors import WorkloadError
    from parity.model.estimate import StepCost
    from parity.workloads.base import Workload
    from parity.workloads.frozen import Frozen


def _preflight(plan: PreparePlan) -> None:
    """Each side this machine cannot run, as one ``DeviceError``."""
    from parity.devices.preflight import unusable
    from parity.errors import DeviceError

    for side in plan.sides:
        problem = unusable(side)
        if problem is not None:
            raise DeviceError(f"side {side} cannot run here: {problem}")


def _cost(
    workload: Workload, frozen: Frozen, plan: PreparePlan, warnings: list[str]
) -> StepCost | None:
    """The pre-run estimate's cheap figures, or None (with a warning) where a step of the
    workload does not run on the CPU in float32: its sides' first processes say more. The
    sides' reduced precisions are timed on the CPU too (a CPU side's, and the
    expected-error run's, which is the CPU at the target's precision), and float64 where
    the fp64 reference is not cached."""
    from parity.cache import reference_cached
    from parity.model.estimate import PRECISION_DTYPE
    from parity.probes.cost import step_cost

    precisions = [p for p in PRECISION_DTYPE if p in {side.precision for side in plan.sides}]
    try:
        with _threads(plan):
            return step_cost(
                workload, frozen, precisions, fp64=not reference_cached(frozen.fingerprint)
            )
    except Exception as exc:  # user code: any failure leaves no estimate
        from parity.safety.redact import redact

        own = own_failure(workload, exc)
        if own is not None:  # the user's own code raised: no side would run it either
            raise own from None
        lines = redact(str(exc)).strip().splitlines()
        first = lines[0][:200] if lines else ""
        warnings.append(
            f"no pre-run estimate: a step of {workload.name} on the CPU raised "
            f"{type(exc).__name__}{': ' + first if first else ''}"
        )
        return None


def own_failure(workload: Workload, exc: BaseException) -> WorkloadError | None:
    """A ``WorkloadError`` naming the failing line where a step of a user's workload file
    raised in that file's own code (the innermost frame of the traceback is the user's:
    a ``NameError``, a bad shape, a ``raise``), which fails on any side; None where it
    raised inside torch or a library (a workload written for another device may not run
    on the CPU and still run on both sides)."""
    import traceback

    from parity.errors import WorkloadError
    from parity.plugins import is_file_workload
    from parity.probes.source import where_line
    from parity.safety.redact import redact
    from parity.workloads.code import is_local

    spec = getattr(workload, "spec", None)
    frames = traceback.extract_tb(exc.__traceback__)
    if spec is None or not is_file_workload(spec.name) or not frames:
        return None
    last = frames[-1]
    if not is_local(last.filename):
        return None
    lines = redact(str(exc)).strip().splitlines()
    message = f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
    code = f" ({redact(last.line.strip())})" if last.line else ""
    return WorkloadError(
        f"workload {spec.name} fails on its own, before any side ran: a step on the CPU "
        f"raised {message} at {where_line(last.filename, last.lineno or 0)}{code}: fix "
        "the workload"
    )


@contextmanager
def _threads(plan: PreparePlan) -> Iterator[None]:
    """The steps timed with the intra-op threads the sides on the host's cores ask for,
    where they agree (``cpu+threads=1`` on both: one thread, as the sides will run);
    torch's default otherwise."""
    import torch

    from parity.model.spec import HOST_COMPUTE

    asked = {s.threads for s in plan.sides if s.device in HOST_COMPUTE}
    before = torch.get_num_threads()
    if len(asked) == 1 and (n := next(iter(asked))) is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Freeze(Mode):
    name: ClassVar[ModeName] = "freeze"
    join_group: ClassVar[bool] = False

    def run(self, session: SideSession) -> None:
        from parity.workloads import resolve
        from parity.workloads.frozen import freeze

        plan = session.job.plan_of(PreparePlan)
        session.enter("preflight")
        _preflight(plan)
        if not plan.resolve:  # the pre-flight alone (``parity.runner.prepare.preflight``): the
            # job's own description, as the parent made it from the spec
            session.write(PREPARED, PreparedWorkload(description=session.job.description))
            session.finish()
            return
        session.enter("resolve")
        workload = resolve(session.job.workload)
        if not plan.freeze:
            session.write(PREPARED, PreparedWorkload(description=workload.describe()))
            session.finish()
            return
        session.enter("freeze")
        warnings: list[str] = []
        frozen = freeze(workload, warn=warnings.append)
        cost = None
        if plan.cost:
            session.enter("cost")
            cost = _cost(workload, frozen, plan, warnings)
        prepared = PreparedWorkload(
            description=frozen.description,
            frozen=str(frozen.path),
            fingerprint=frozen.fingerprint,
            parts=frozen.parts,
            warnings=tuple(warnings),
            cost=cost,
        )
        session.write(PREPARED, prepared)
        session.finish()
