"""The one scheduler: every command's work as jobs, run in fresh worker processes.

A comparison, a single run or scan, script mode, scaling and the rollback, recovery and
soak checks are all plans of ``Job``s handed to an ``Orchestrator``, which owns what they
share:

- output directories: the default name (``parity-runs/<stamp>-<name>``), refusing a
  non-empty one, and ``--resume`` (a complete bundle under its final name is reused, a
  hidden temporary one is removed);
- running a job into a bundle (``runner.launch.run_job``), relaying its events to the
  progress sink;
- the time budget: its clock starts after set-up (``start_budget``: the workload frozen,
  the zygote started) and runs through the fp64 reference, the rounds and the compliance
  runs; ``finish`` records what it paid for and what other processes took of the machine
  meanwhile (``runner.cpu``);
- interleaving: rounds of one process per side in ABBA order, with adaptive stopping on
  the speed interval, the time budget or a repeat cap (``rounds``); a round that would
  not fit in the budget, with the runs after the rounds, is not started;
- independent parts at the same time where they share no device (``parallel``).

The plans that use it are ``parity.runs``' (a run, a comparison with its references
and compliance runs, a curve) and ``parity.checks``'; what becomes of the bundles
(judging, reports, the index) is ``parity.sinks``': the scheduler never judges. Each
bundle is loaded once, as its run finishes, and held (``measured``, ``sides``).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from parity.bundle import SIDE_FILE, load_bundle, repeat_name, write_doc
from parity.errors import (
    BundleError,
    DeviceError,
    OptionError,
    OutputError,
    ParityError,
    SideError,
    WorkloadError,
)
from parity.model.bundle import Bundle, SideRuns, step_samples
from parity.model.codec import encode
from parity.model.job import Event, Job, Mode, PreparePlan
from parity.model.side import Interference, MeasurePlan, MeasureRecord, Stop
from parity.model.verdict import ROLES, ByRole, Role
from parity.model.workload import (
    FingerprintParts,
    PreparedWorkload,
    QualitySpec,
    WorkloadDescription,
    sha256_json,
)
from parity.runner.cpu import CpuWatch
from parity.runner.launch import Launcher, run_job
from parity.spec import SideSpec, WorkloadSpec

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


def remove(path: Path) -> None:
    """Remove a file, a link (never what it points to) or a directory tree."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


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
    def of(cls, spec: WorkloadSpec, prepared: PreparedWorkload, *, timeout_s: float) -> JobTemplate:
        """The template of a workload a ``freeze`` job prepared (``prepare_workload``)."""
        if prepared.frozen is None or prepared.fingerprint is None or prepared.parts is None:
            raise RuntimeError(f"workload {spec.name} was described, not frozen")
        return cls(
            workload=spec,
            frozen=prepared.frozen,
            fingerprint=prepared.fingerprint,
            parts=prepared.parts,
            description=prepared.description,
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


@dataclass(frozen=True, kw_only=True)
class Tally:
    """Where the rounds stand after one: each side's bundles and what the rounds cost."""

    done: dict[Role, list[Bundle]]
    rounds: int
    #: seconds on the budget's clock
    elapsed_s: float
    #: wall seconds of each round, and of each side's runs, in order
    round_s: tuple[float, ...]
    run_s: dict[Role, tuple[float, ...]]

    @property
    def next_round_s(self) -> float:
        """What another round will cost: the typical round, or the last if it was dearer
        (the machine just got slower). After the first round alone, the sum of each side's
        plain run (see ``next_run_s``)."""
        if len(self.round_s) == 1:
            return min(self.round_s[0], sum(self.next_run_s(role) for role in self.run_s))
        return _next_cost(self.round_s)

    def next_run_s(self, role: Role) -> float:
        """What another run of ``role`` without the first repeat's extras will cost. After
        the first run alone, that run without its extras (the numerics probe, the op scan:
        first repeat only): the phases its worker timed up to its last step, with the
        margin and the parent's own share per run."""
        costs = self.run_s[role]
        if len(costs) == 1 and self.done[role]:
            plain = _plain_run_s(self.done[role][0])
            if plain is not None:
                return min(costs[0], COST_MARGIN * plain + RUN_OVERHEAD_S)
        return _next_cost(costs)


#: margin on the typical cost of what is still to run
COST_MARGIN = 1.2
#: a run's cost outside its timed phases: the worker's writing and exit, the parent's
#: sealing of its bundle (a generous figure: the next rounds correct it)
RUN_OVERHEAD_S = 0.5


def _plain_run_s(bundle: Bundle) -> float | None:
    """A run's start, load and steps (what every repeat pays), from its metrics."""
    if not bundle.ok or bundle.metrics is None:
        return None
    metrics = bundle.metrics
    p = metrics.phases
    if p.start_import_s is None:
        return None
    return p.start_import_s + (p.load_s or 0.0) + p.first_step_s + p.warmup_s + p.steady_s


def _next_cost(costs: tuple[float, ...]) -> float:
    """The median cost after the first (which also captures numerics and scans ops) with
    a margin, or the last cost if higher."""
    import statistics

    if not costs:
        return 0.0
    later = costs[1:] or costs
    return max(COST_MARGIN * statistics.median(later), costs[-1])


Decide = Callable[[Tally], Stop | None]


@dataclass
class Orchestrator:
    """Runs jobs into bundles under one output directory; its launcher's zygote (forked
    workers) lives until ``close()`` (or the end of a ``with`` block)."""

    out: Path
    progress: ProgressSink | None = None
    started: float = field(default_factory=time.monotonic)
    launcher: Launcher = field(default_factory=Launcher)
    #: when the budget's clock started (None: with the rounds)
    clock: float | None = None
    setup_s: float | None = None
    watch: CpuWatch | None = None
    #: each side's repeats as ``rounds`` ran them (loaded once, as each finished)
    measured: dict[Role, list[Bundle]] = field(default_factory=dict)

    def start_budget(self, *first: Job) -> None:
        """Set-up is over: start the zygote the ``first`` jobs will fork from (if one
        forks), then the budget's clock and the watch on the machine's CPU."""
        for job in first:
            self.launcher.prepare(job)
        self.clock = time.monotonic()
        self.setup_s = self.clock - self.started
        self.watch = CpuWatch(extra=self.launcher.cpu_s)

    def elapsed_s(self) -> float:
        """Seconds on the budget's clock (0 before it started)."""
        return 0.0 if self.clock is None else time.monotonic() - self.clock

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
        reused, anything else there (unverifiable, incomplete, a link) is removed and run
        again. An I/O error while writing it is an ``OutputError`` naming the part."""
        if path.exists() or path.is_symlink():
            try:
                return load_bundle(path)
            except BundleError as exc:
                log.warning("parity: %s: running it again", exc)
                remove(path)
        try:
            return run_job(job, path, on_event=self._relay(label, hook), launcher=self.launcher)
        except OutputError as exc:
            raise OutputError(f"{label}: {exc}") from exc

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
        self, make_job: Callable[[Role, int], Job], plan: MeasurePlan, decide: Decide
    ) -> Stop:
        """Rounds of one process per side, ABBA, until ``decide`` says stop (or, with
        ``plan.repeats``, that many rounds). ``finish`` records the end."""
        from parity.stats import interleaved_order

        if self.clock is None:
            self.start_budget()
        rounds = plan.repeats if plan.repeats is not None else plan.max_repeats
        order: list[tuple[Role, int]] = interleaved_order(rounds, ROLES)  # type: ignore[assignment]
        done: dict[Role, list[Bundle]] = {role: [] for role in ROLES}
        self.measured = done
        run_s: dict[Role, list[float]] = {role: [] for role in ROLES}
        round_s: list[float] = []
        stop: Stop | None = None
        ran: list[str] = []
        for i in range(0, len(order), len(ROLES)):
            round_start = time.monotonic()
            for role, k in order[i : i + len(ROLES)]:
                label = f"{role} {repeat_name(k)}"
                run_start = time.monotonic()
                bundle = self.run(make_job(role, k), self.out / role / repeat_name(k), label=label)
                run_s[role].append(time.monotonic() - run_start)
                done[role].append(bundle)
                ran.append(label)
            round_s.append(time.monotonic() - round_start)
            tally = Tally(
                done=done,
                rounds=i // len(ROLES) + 1,
                elapsed_s=self.elapsed_s(),
                round_s=tuple(round_s),
                run_s={role: tuple(costs) for role, costs in run_s.items()},
            )
            stop = decide(tally)
            if stop is not None:
                break
        assert stop is not None, "decide must stop at the last round"
        return replace(stop, elapsed_s=self.elapsed_s(), order=tuple(ran))

    def finish(self, stop: Stop, plan: MeasurePlan) -> Stop:
        """Measuring is over: what the budget paid for and what interference took of it,
        into each side's ``side.json``."""
        interference: Interference | None = self.watch.finish() if self.watch else None
        stop = replace(
            stop, spent_s=self.elapsed_s(), setup_s=self.setup_s, interference=interference
        )
        for role in ROLES:
            write_doc(self.out / role / SIDE_FILE, MeasureRecord(stop=stop, plan=plan))
        return stop

    def sides(
        self, stop: Stop, plan: MeasurePlan, compliance: dict[str, Bundle] | None = None
    ) -> ByRole[SideRuns]:
        """Each side as measured, in memory: the rounds' repeats, the target's
        ``compliance`` runs and how measuring ended (``finish``'s ``stop``)."""
        info = MeasureRecord(stop=stop, plan=plan)

        def side(role: Role, extra: dict[str, Bundle]) -> SideRuns:
            runs = tuple(self.measured.get(role, ()))
            return SideRuns(path=self.out / role, repeats=runs, compliance=extra, info=info)

        return ByRole(baseline=side("baseline", {}), target=side("target", compliance or {}))


# -- preparing a workload: user code runs in a worker, never here ---------------------------


def prepare_job(
    spec: WorkloadSpec,
    *,
    freeze: bool = True,
    timeout_s: float = 900.0,
    sides: tuple[SideSpec, ...] = (),
) -> Job:
    """A ``freeze`` job for a spec (``sides``: checked first, ``devices.preflight``).
    Until the worker has resolved it the parent knows only the spec, so the job's
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
        mode="freeze",
        timeout_s=timeout_s,
        prepare=PreparePlan(freeze=freeze, sides=sides),
    )


def prepare_workload(
    spec: WorkloadSpec,
    *,
    launcher: Launcher,
    freeze: bool = True,
    timeout_s: float = 900.0,
    sides: tuple[SideSpec, ...] = (),
) -> PreparedWorkload:
    """Resolve (and with ``freeze`` freeze) a workload in a worker started like any job;
    the parent learns only what its ``prepared.json`` says. A workload that cannot be
    made (a file that exits or raises when imported, a factory that raises, a size that
    does not exist) is one ``WorkloadError`` line; a worker killed or out of time, a
    ``SideError``; a side in ``sides`` this machine cannot run, a ``DeviceError``.
    Warnings (a cache entry rebuilt) are logged. Its events are not shown:
    bad input must end in one line, and a workload is prepared before anything else."""
    import tempfile

    # the job's own bundle is read and removed: it lives in the system's temporary
    # directory, so that a workload refused leaves nothing anywhere parity writes
    where = Path(tempfile.mkdtemp(prefix="parity-prepare-"))
    try:
        final = where / "job"
        job = prepare_job(spec, freeze=freeze, timeout_s=timeout_s, sides=sides)
        bundle = run_job(job, final, launcher=launcher)
        if not bundle.ok or bundle.prepared is None:
            raise _not_prepared(spec, bundle.manifest.reason or "the worker did not say why")
        prepared = bundle.prepared
    finally:
        shutil.rmtree(where, ignore_errors=True)
    for warning in prepared.warnings:
        log.warning("parity: %s", warning)
    return prepared


def _not_prepared(spec: WorkloadSpec, reason: str) -> ParityError:
    """Why a workload could not be prepared, as the error the CLI prints in one line."""
    if reason.startswith(("timed out", "the worker was killed")):
        return SideError(f"workload {spec.name} could not be prepared: {reason}")
    if reason.startswith("the worker exited"):
        reason += ": does the workload's code call exit() or os._exit() when imported?"
    prefix, _, rest = reason.partition(": ")
    if prefix.startswith("WorkloadError in phase"):  # the registry's own words suffice
        return WorkloadError(rest)
    if prefix.startswith("DeviceError in phase"):
        return DeviceError(rest)
    return WorkloadError(f"workload {spec.name} could not be prepared: {reason}")


# -- a comparison's measuring: when the rounds stop ----------------------------------------

Samples = dict[Role, list[list[float]]]


def decide_stop(
    plan: MeasurePlan,
    samples: Samples,
    rounds: int,
    elapsed: float,
    failed: bool,
    *,
    next_round_s: float | None = None,
    reserve_s: float = 0.0,
) -> Stop | None:
    """After ``rounds`` rounds: stop (and why), or None to run another round. ``samples``
    are each side's steady step times, one list per process; another round costs
    ``next_round_s`` and ``reserve_s`` must be left for the runs after the rounds."""
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
    if rounds < plan.min_repeats and elapsed + (next_round_s or 0.0) + reserve_s <= plan.budget_s:
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
        next_repeat_s=next_round_s,
        reserve_s=reserve_s,
    )
    return None if decision is None else Stop(reason=decision.reason, message=decision.message)


def adaptive_stop(plan: MeasurePlan, *, runs_after: int = 0) -> Decide:
    """The stopping rule of a comparison's rounds on its bundles (see ``decide_stop``):
    the next round is costed as ``Tally.next_round_s`` says, and ``runs_after`` target
    runs (the compliance runs) are kept out of the budget at ``Tally.next_run_s`` each."""

    def decide(tally: Tally) -> Stop | None:
        failed = any(not b.ok for bundles in tally.done.values() for b in bundles)
        samples: Samples = {role: step_samples(bundles) for role, bundles in tally.done.items()}
        return decide_stop(
            plan,
            samples,
            tally.rounds,
            tally.elapsed_s,
            failed,
            next_round_s=tally.next_round_s,
            reserve_s=runs_after * tally.next_run_s("target"),
        )

    return decide
