"""The one scheduler: every command's work as jobs, run in fresh worker processes.

A comparison, a single run or scan, script mode, scaling and the rollback, recovery and
soak checks are all plans of ``Job``s handed to an ``Orchestrator``, which owns what they
share:

- output directories: the default name (``parity-runs/<stamp>-<name>``), refusing a
  non-empty one, and ``--resume`` (a complete bundle under its final name is reused, a
  hidden temporary one is removed);
- running a job into a bundle (``runner.launch.run_job``), relaying its events to the
  progress sink;
- interleaving: rounds of one process per side in ABBA order, with adaptive stopping on
  the speed interval, the time budget or a repeat cap (``rounds``);
- independent parts at the same time where they share no device (``parallel``).

What to do with the bundles (judging, reports, the index) is the API's: the scheduler
never judges.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from parity.bundle import (
    MANIFEST,
    SIDE_FILE,
    Bundle,
    load_bundle,
    repeat_name,
    write_doc,
)
from parity.errors import BundleError, OptionError
from parity.model.job import Event, Job, Mode
from parity.model.side import MeasurePlan, SideFile, Stop
from parity.model.verdict import ROLES, Role
from parity.model.workload import FingerprintParts, WorkloadDescription
from parity.runner.launch import Launcher, run_job
from parity.spec import SideSpec, WorkloadSpec

if TYPE_CHECKING:
    from parity.workloads.frozen import Frozen

RUNS_DIR = Path("parity-runs")
log = logging.getLogger("parity")
#: ``(label, event)``: a side's or part's label, e.g. ``baseline r01``, and its event
ProgressSink = Callable[[str, Event], None]
EventHook = Callable[[Event], None]


def default_out(name: str, suffix: str = "") -> Path:
    """``parity-runs/<stamp>-<name>[-suffix]``: where a command writes when not told."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = name.replace(":", "_").replace("/", "_")
    return RUNS_DIR / f"{stamp}-{safe}{'-' + suffix if suffix else ''}"


def check_fresh(path: Path) -> None:
    """A new or empty output directory, else OptionError before anything is written."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise OptionError(
            f"output directory {path} already exists and is not empty: choose a new --out"
        )


def clear_partial(out: Path) -> list[Path]:
    """Remove the hidden temporary directories a killed run left (never a bundle)."""
    removed = []
    for tmp in sorted(out.glob("**/.*.tmp-*")):
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


@dataclass(frozen=True, kw_only=True)
class JobTemplate:
    """What every job of a plan shares: the workload and its fingerprint, the timeout
    and torchrun settings. ``job()`` makes one job of it."""

    workload: WorkloadSpec
    frozen: str | None
    fingerprint: str
    parts: FingerprintParts
    description: WorkloadDescription
    timeout_s: float = 900.0

    @classmethod
    def of(cls, spec: WorkloadSpec, frozen: Frozen, timeout_s: float) -> JobTemplate:
        """The template of a frozen workload."""
        return cls(
            workload=spec,
            frozen=str(frozen.path),
            fingerprint=frozen.fingerprint,
            parts=frozen.parts,
            description=frozen.description,
            timeout_s=timeout_s,
        )

    def job(self, role: str, side: SideSpec, *, mode: Mode = "measure", **fields: object) -> Job:
        return Job(
            role=role,
            side=side,
            workload=self.workload,
            frozen=self.frozen,
            fingerprint=self.fingerprint,
            parts=self.parts,
            description=self.description,
            mode=mode,
            **{"timeout_s": self.timeout_s, **fields},  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class Part:
    """One job of a plan, where its bundle goes, its progress label and an event hook."""

    job: Job
    path: Path
    label: str
    hook: EventHook | None = None


@dataclass
class Orchestrator:
    """Runs jobs into bundles under one output directory; its launcher's zygote (forked
    workers) lives until ``close()`` (or the end of a ``with`` block)."""

    out: Path
    progress: ProgressSink | None = None
    started: float = field(default_factory=time.monotonic)
    launcher: Launcher = field(default_factory=Launcher)

    def __enter__(self) -> Orchestrator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.launcher.close()

    def _relay(self, label: str, hook: EventHook | None) -> EventHook | None:
        sink = self.progress
        if sink is None and hook is None:
            return None

        def relay(event: Event) -> None:
            if hook is not None:
                hook(event)
            if sink is not None:
                sink(label, event)

        return relay

    def run(self, job: Job, path: Path, *, label: str, hook: EventHook | None = None) -> Bundle:
        """One job into ``path``; a complete, verified bundle already there (resume) is
        reused, an unverifiable one is removed and run again."""
        if (path / MANIFEST).is_file():
            try:
                return load_bundle(path)
            except BundleError as exc:
                log.warning("parity: %s: running it again", exc)
                shutil.rmtree(path)
        run_job(job, path, on_event=self._relay(label, hook), launcher=self.launcher)
        return load_bundle(path)

    def parallel(self, work: Sequence[Part], *, together: bool = True) -> list[Bundle]:
        """Independent jobs, at the same time when ``together`` (parts that share no
        device, e.g. on the CPU), else one after the other."""
        if not together or len(work) <= 1:
            return [self.run(p.job, p.path, label=p.label, hook=p.hook) for p in work]
        with ThreadPoolExecutor(len(work)) as pool:
            return list(
                pool.map(lambda p: self.run(p.job, p.path, label=p.label, hook=p.hook), work)
            )

    def rounds(
        self,
        make_job: Callable[[Role, int], Job],
        plan: MeasurePlan,
        decide: Callable[[dict[Role, list[Bundle]], int, float], Stop | None],
    ) -> Stop:
        """Rounds of one process per side, ABBA, until ``decide`` says stop (or, with
        ``plan.repeats``, that many rounds); ``side.json`` records how it ended."""
        from parity.stats import interleaved_order

        start = time.monotonic()
        rounds = plan.repeats if plan.repeats is not None else plan.max_repeats
        order: list[tuple[Role, int]] = interleaved_order(rounds, ROLES)  # type: ignore[assignment]
        done: dict[Role, list[Bundle]] = {role: [] for role in ROLES}
        stop: Stop | None = None
        ran: list[str] = []
        for i in range(0, len(order), len(ROLES)):
            for role, k in order[i : i + len(ROLES)]:
                label = f"{role} {repeat_name(k)}"
                bundle = self.run(make_job(role, k), self.out / role / repeat_name(k), label=label)
                done[role].append(bundle)
                ran.append(label)
            stop = decide(done, i // len(ROLES) + 1, time.monotonic() - start)
            if stop is not None:
                break
        assert stop is not None, "decide must stop at the last round"
        stop = replace(stop, elapsed_s=time.monotonic() - start, order=tuple(ran))
        for role in ROLES:
            write_doc(self.out / role / SIDE_FILE, SideFile(stop=stop, plan=plan))
        return stop


# -- a comparison's measuring: the CPU references, rounds, compliance runs -------------------

REFERENCE_DIR = "reference"
EXPECTED_DIR = "expected"


Samples = dict[Role, list[list[float]]]


def decide_stop(
    plan: MeasurePlan, samples: Samples, rounds: int, elapsed: float, failed: bool
) -> Stop | None:
    """After ``rounds`` rounds: stop (and why), or None to run another round. ``samples``
    are each side's steady step times, one list per process."""
    from parity.stats import Processes, ratio_ci, should_stop

    if failed:
        return Stop(
            reason="failure",
            message=f"a side failed in round {rounds}: no further repeats were run",
        )
    if plan.repeats is not None:
        if rounds >= plan.repeats:
            return Stop(reason="repeats", message=f"{rounds} repeat(s) per side, as asked")
        return None
    if rounds < plan.min_repeats:
        return None
    usable = {role: [s for s in runs if s] for role, runs in samples.items()}
    if not all(usable.values()):
        return Stop(
            reason="no_samples",
            message="no steady-state samples: raise --steps so a run has more than one",
        )
    ci = ratio_ci(
        Processes.from_steps(usable["baseline"], "baseline"),
        Processes.from_steps(usable["target"], "target"),
    )
    decision = should_stop(
        ci,
        precision=plan.precision,
        elapsed_s=elapsed,
        budget_s=plan.budget_s,
        repeats=rounds,
        min_repeats=plan.min_repeats,
        max_repeats=plan.max_repeats,
    )
    return None if decision is None else Stop(reason=decision.reason, message=decision.message)


def adaptive_stop(
    plan: MeasurePlan,
) -> Callable[[dict[Role, list[Bundle]], int, float], Stop | None]:
    """The stopping rule of a comparison's rounds on its bundles (see ``decide_stop``)."""

    def decide(done: dict[Role, list[Bundle]], rounds: int, elapsed: float) -> Stop | None:
        failed = any(not b.ok for bundles in done.values() for b in bundles)
        samples: Samples = {
            role: [list(b.metrics.steady_samples) for b in bundles if b.metrics]
            for role, bundles in done.items()
        }
        return decide_stop(plan, samples, rounds, elapsed, failed)

    return decide


def fp64_reference(orch: Orchestrator, template: JobTemplate, cache: Path) -> Bundle:
    """The fp64 CPU reference bundle of a frozen workload: its whole run in float64, made
    once per fingerprint in the cache, then copied next to the sides (``OUT/reference``)
    so that the comparison's directory carries everything a later ``parity diff`` needs."""
    job = template.job("reference", SideSpec(device="cpu"), mode="reference")
    return cached_run(orch, job, cache / template.fingerprint, REFERENCE_DIR, "fp64 reference")


def expected_run(orch: Orchestrator, template: JobTemplate, side: SideSpec, cache: Path) -> Bundle:
    """The expected-error run: the whole run on the CPU at ``side``'s precision (e.g.
    ``cpu+bf16``), cached per fingerprint and precision, copied to ``OUT/expected``."""
    job = template.job("expected", side, mode="expected")
    key = f"{template.fingerprint}-{str(side).replace('+', '_').replace('=', '-')}"
    return cached_run(orch, job, cache / key, EXPECTED_DIR, f"expected error ({side})")


def cached_run(orch: Orchestrator, job: Job, cached: Path, name: str, label: str) -> Bundle:
    """A CPU run that depends on its job alone: reused from ``cached`` (verified), else run
    and cached there, then copied to ``OUT/name`` (a failure stays there, never cached)."""
    import uuid

    dest = orch.out / name
    if (dest / MANIFEST).is_file():  # resuming: the copy is already there
        return load_bundle(dest)
    if (cached / MANIFEST).is_file():
        try:
            load_bundle(cached)  # verified (no links, every file as written) before use
        except BundleError as exc:  # edited, or written by another parity: make it again
            log.warning("parity: the cached %s is unusable (%s): remaking it", label, exc)
            shutil.rmtree(cached)
    if not (cached / MANIFEST).is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.parent / f".{cached.name}.{uuid.uuid4().hex[:8]}"
        bundle = orch.run(job, tmp, label=label)
        if not bundle.ok:  # keep the failure beside the sides, never in the cache
            shutil.move(str(tmp), dest)
            return load_bundle(dest)
        try:
            tmp.rename(cached)
        except OSError:  # made by another process meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(cached, dest)
    return load_bundle(dest)


def compliance_runs(
    orch: Orchestrator,
    target: SideSpec,
    reseeded: JobTemplate,
    same: JobTemplate,
) -> dict[str, Bundle]:
    """The target's two compliance runs: another seed, and one identical input."""
    runs = {
        "reseeded": reseeded.job("target", target, compliance=True),
        "same-input": same.job("target", target, compliance=True, same_input=True),
    }
    return {
        name: orch.run(job, orch.out / "target" / name, label=f"target {name}")
        for name, job in runs.items()
    }
