"""The one scheduler: every command's work as jobs, run in fresh worker processes.

A comparison, a single run or scan, script mode, scaling and the rollback, recovery and
soak checks are all plans of ``Job``s handed to an ``Orchestrator``, which owns what they
share:

- output directories: the default name (``parity-runs/<stamp>-<name>``), refusing a
  non-empty one, and ``--resume`` (a complete bundle under its final name is reused, a
  hidden temporary one is removed);
- running a job into a bundle by its launch strategy (``runner.strategy``: a process
  here, a cluster node, or inline in tests; ``launch_for`` chooses), relaying its events to the
  progress sink;
- the time budget: its clock starts after set-up (``start_budget``: the workload frozen,
  the zygote started) and runs through the fp64 reference, the rounds and the compliance
  runs; ``finish`` records what it paid for and what other processes took of the machine
  meanwhile (``runner.cpu``);
- interleaving: rounds of one process per side in ABBA order, with adaptive stopping on
  the speed interval, the time budget or a repeat cap (``rounds``); a round that would
  not fit in the budget, with the runs after the rounds, is not started;
- independent parts at the same time where they share no device (``parallel``).

The plans that use it are ``parity.measure.runs``' (a run, a comparison with its references
and compliance runs, a curve) and ``parity.checks``'; what becomes of the bundles
(judging, reports, the index) is ``parity.sinks``': the scheduler never judges. Each
bundle is loaded once, as its run finishes, and held (``measured``, ``sides``); one
that ``--resume`` reuses must belong where it is (``parity.measure.resumable``).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Protocol, cast

from parity.bundle import REQUEST, SIDE_FILE, load_bundle, repeat_name, sha256_file, write_doc
from parity.errors import (
    BundleError,
    OptionError,
    OutputError,
)
from parity.measure import budget
from parity.model.bundle import Bundle, SideRuns
from parity.model.estimate import Estimate, StepCost
from parity.model.job import Event, Job, JobPlan, TimingPlan
from parity.model.placement import Placement
from parity.model.side import Interference, MeasurePlan, MeasureRecord, Stop, TimingSteps
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.verdict import ROLES, ByRole, Role
from parity.model.workload import (
    FingerprintParts,
    PreparedWorkload,
    WorkloadDescription,
)
from parity.runner.ahead import settle
from parity.runner.cpu import CpuWatch
from parity.runner.launch import Launcher
from parity.runner.strategy import Launch

RUNS_DIR = Path("parity-runs")
#: a comparison's stored request (``parity.request`` reads and writes it)
REQUEST_FILE = REQUEST
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
    #: the freeze job's cheap figures for the pre-run estimate (a comparison's)
    cost: StepCost | None = None

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
            cost=prepared.cost,
        )

    def job(self, role: str, side: SideSpec, plan: JobPlan | None = None, **fields: object) -> Job:
        """A job of ``role`` on ``side`` with its mode's ``plan`` (timed steps, none given)."""
        return Job(
            role=role,
            side=side,
            workload=self.workload,
            frozen=self.frozen,
            fingerprint=self.fingerprint,
            parts=self.parts,
            description=self.description,
            plan=TimingPlan() if plan is None else plan,
            **{"timeout_s": self.timeout_s, **fields},  # type: ignore[arg-type]
        )


class PhaseClock:
    """An event hook that keeps when each phase of a run began, for what the set-up parts
    inside a comparison's first processes took (the numerics probe, the op scan)."""

    #: phase names in a worker's events, and what a verdict calls them
    PROBES: ClassVar[dict[str, str]] = {
        "numerics probe": "numerics probe",
        "scan": "op scan",
        "numerics probe (cached)": "numerics probe (cached)",
        "scan (cached)": "op scan (cached)",
    }

    def __init__(self) -> None:
        self.marks: list[tuple[str, int]] = []

    def __call__(self, event: Event) -> None:
        if event.event == "phase" and event.phase is not None:
            self.marks.append((event.phase, event.t_ns))

    def probes(self, role: str) -> dict[str, float]:
        """``{"<role> numerics probe": seconds, ...}`` for the probe phases seen."""
        spans = zip(self.marks, self.marks[1:], strict=False)
        return {
            f"{role} {self.PROBES[phase]}": (end - start) / 1e9
            for (phase, start), (_, end) in spans
            if phase in self.PROBES
        }


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
    #: steps each side's timing processes run (None: the workload's own)
    steps: dict[Role, int | None] = field(default_factory=dict)

    @property
    def next_round_s(self) -> float:
        """What another round will cost: the typical round, or the last if it was dearer
        (the machine just got slower). After the first round alone, the sum of each side's
        plain run (see ``next_run_s``)."""
        if len(self.round_s) == 1:
            return min(self.round_s[0], sum(self.next_run_s(role) for role in self.run_s))
        return budget.next_cost(self.round_s)

    def next_run_s(self, role: Role) -> float:
        """What another run of ``role`` without the first repeat's extras will cost. After
        the first run alone, that run without its extras (the numerics probe, the op scan:
        first repeat only): the phases its worker timed up to its last step, with the
        margin and the parent's own share per run (``budget.rerun_s``)."""
        costs = self.run_s[role]
        if len(costs) == 1 and self.done[role]:
            plain = budget.rerun_s(self.done[role][0], self.steps.get(role))
            if plain is not None:
                return min(costs[0], plain)
        return budget.next_cost(costs)


Decide = Callable[[Tally], Stop | None]
#: told each side's bundles after the first and second rounds; answers the timing
#: processes' steps
AfterFirst = Callable[[dict[Role, list[Bundle]]], dict[Role, int | None]]
#: rounds after which the timing processes are (re)sized: the first (the quality runs),
#: and the second, the first with a spread between processes to size by
SIZING_ROUNDS = 2


class Placed(Protocol):
    """A side that runs on a node of its own (``parity.cluster``): a job in, its bundle
    at ``final``; its node taken (waited for) when its first job is due, given back
    after its last."""

    def run(self, job: Job, final: Path, on_event: EventHook | None) -> Path: ...

    def take(self) -> Placement: ...

    def release(self) -> None: ...


@dataclass(frozen=True)
class OnNode:
    """The launch strategy of a side placed on a cluster node: its job runs there, its
    bundle (made on another node) is loaded and verified here."""

    side: Placed

    def prepare(self, job: Job) -> object:
        return "node"

    def run(self, job: Job, path: Path, on_event: EventHook | None = None) -> Bundle:
        self.side.run(job, path, on_event)
        return load_bundle(path)

    def cpu_s(self) -> float:
        return 0.0  # the node's, not this machine's

    def close(self) -> None:
        pass  # the side's actor ends with the comparison (``placed_sides``)


#: how the rounds ran when both sides ran on nodes of their own (``Stop.notes``)
SIDE_BY_SIDE = (
    "the rounds ran side by side: each side on its own cluster node ({nodes}), the two "
    "sides' processes of a round at the same time (timing never spans two machines)"
)
FIRST_IN_TURN = "; the first round in turn (the target's quality run scores the baseline's tokens)"


@dataclass
class Orchestrator:
    """Runs jobs into bundles under one output directory; its launcher's zygote (forked
    workers) lives until ``close()`` (or the end of a ``with`` block). A role in
    ``placed`` runs on its own node, every other job here."""

    out: Path
    progress: ProgressSink | None = None
    started: float = field(default_factory=time.monotonic)
    launcher: Launch = field(default_factory=Launcher)
    #: when the budget's clock started (None: with the rounds)
    clock: float | None = None
    setup_s: float | None = None
    watch: CpuWatch | None = None
    #: lines the plan adds to how measuring ended (``Stop.notes``)
    notes: list[str] = field(default_factory=list)
    #: seconds each set-up part took, by name (``Stop.probes``)
    probes: dict[str, float] = field(default_factory=dict)
    #: each side's timing processes' steps (``MeasureRecord.timing``), set after the first round
    timing: dict[Role, TimingSteps | None] = field(default_factory=dict)
    #: each phase costed before the sides ran, and what the budget cut (``Stop.estimate``)
    estimate: Estimate | None = None
    #: where the rounds stood after the last one
    tally: Tally | None = None
    placed: Mapping[str, Placed] = field(default_factory=dict)
    #: each side's repeats as ``rounds`` ran them (loaded once, as each finished)
    measured: dict[Role, list[Bundle]] = field(default_factory=dict)
    #: told each bundle's path as it lands under ``out`` (a URL run uploads it)
    landed: Callable[[Path], None] | None = None
    #: a failed bundle already there runs again (``--resume``: the missing and the failed)
    rerun_failed: bool = False
    #: the sha256 of ``OUT/request.json`` where there is one: stamped on the jobs of the
    #: rounds and compliance runs, and checked on every bundle ``--resume`` reuses
    request: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        stored = self.out / REQUEST_FILE
        if stored.is_file() and not stored.is_symlink():
            self.request = sha256_file(stored)

    def start_budget(self, *first: Job) -> None:
        """Set-up is over: start the zygote the ``first`` jobs will fork from (if one
        forks), then the budget's clock and the watch on the machine's CPU."""
        for job in first:
            self.launch_for(job.role).prepare(job)
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
                found = load_bundle(path)
            except BundleError as exc:
                log.warning("parity: %s: running it again", exc)
                remove(path)
            else:
                from parity.measure.resumable import belonging

                kept = belonging(found, job)
                if kept.ok or not self.rerun_failed:
                    return kept
                log.warning(
                    "parity: %s failed before (%s): running it again", label, kept.manifest.reason
                )
                remove(path)
        try:  # decoded from what its seal read: read once
            bundle = self.launch_for(job.role).run(job, path, self._relay(label, hook))
        except OutputError as exc:
            raise OutputError(f"{label}: {exc}") from exc
        if self.landed is not None and path.is_relative_to(self.out):
            self.landed(path)
        return bundle

    def launch_for(self, role: str) -> Launch:
        """How ``role``'s jobs start, chosen here alone: on the side's cluster node where
        it is placed, else by this orchestrator's launcher (processes on this machine, or
        inline in tests)."""
        side = self.placed.get(role)
        return OnNode(side) if side is not None else self.launcher

    def _apart(self) -> str:
        """Where both sides run on cluster nodes of their own: their pools taken (waited
        for together, neither held while the other is missing) and the two nodes named;
        "" otherwise."""
        if not all(role in self.placed for role in ROLES):
            return ""
        from parity.cluster.sides import RemoteSide, take_together

        where = take_together([cast(RemoteSide, self.placed[role]) for role in ROLES])
        if len({p.node_id for p in where}) < len(where):
            return ""
        return ", ".join(
            f"{role} on {p.hostname} ({p.node_id[:12]})"
            for role, p in zip(ROLES, where, strict=True)
        )

    def release(self, role: str) -> None:
        """``role``'s last job on its node is done: its pool given back."""
        if role in self.placed:
            self.placed[role].release()

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
        decide: Decide,
        *,
        after_first: AfterFirst | None = None,
        first_in_turn: bool = False,
    ) -> Stop:
        """Rounds of one process per side, ABBA, until ``decide`` says stop (or, with
        ``plan.repeats``, that many rounds). ``after_first`` is told each side's bundles
        after the first round (the quality runs) and the second, and answers the steps of
        the timing processes after them, per side (None: the workload's). ``finish``
        records the end. Where each side runs on a cluster node of its own, a round's two
        processes run at the same time (``first_in_turn``: the first round's in turn)."""
        from parity.stats import interleaved_order

        if self.clock is None:
            self.start_budget()
        settle()  # no import in this process beside a timed step
        rounds = plan.repeats if plan.repeats is not None else plan.most_rounds
        order: list[tuple[Role, int]] = interleaved_order(rounds, ROLES)  # type: ignore[assignment]
        done: dict[Role, list[Bundle]] = {role: [] for role in ROLES}
        self.measured = done
        run_s: dict[Role, list[float]] = {role: [] for role in ROLES}
        round_s: list[float] = []
        stop: Stop | None = None
        ran: list[str] = []
        steps: dict[Role, int | None] = {}
        apart = self._apart()
        if apart:
            self.notes.append(
                SIDE_BY_SIDE.format(nodes=apart) + (FIRST_IN_TURN if first_in_turn else "")
            )

        def one(role: Role, k: int) -> tuple[Role, str, Bundle, float]:
            label = f"{role} {repeat_name(k)}"
            run_start = time.monotonic()
            clock = PhaseClock() if k == 0 else None
            job = make_job(role, k)
            if self.request is not None:
                job = replace(job, request=self.request)
            bundle = self.run(job, self.out / role / repeat_name(k), label=label, hook=clock)
            if clock is not None:
                self.probes.update(clock.probes(role))
            return role, label, bundle, time.monotonic() - run_start

        def landed(role: Role, label: str, bundle: Bundle, took: float) -> None:
            run_s[role].append(took)
            done[role].append(bundle)
            ran.append(label)

        for i in range(0, len(order), len(ROLES)):
            round_start = time.monotonic()
            turn = order[i : i + len(ROLES)]
            if apart and not (first_in_turn and i == 0):
                with ThreadPoolExecutor(len(turn)) as pool:
                    results = list(pool.map(lambda rk: one(*rk), turn))
                for result in results:
                    landed(*result)
            else:  # each run's bundle is in ``done`` before the next job is made
                for role, k in turn:  # (the target's quality run scores the baseline's tokens)
                    landed(*one(role, k))
            round_s.append(time.monotonic() - round_start)
            if i < SIZING_ROUNDS * len(ROLES) and after_first is not None:
                steps = after_first(done)
            tally = Tally(
                done=done,
                rounds=i // len(ROLES) + 1,
                elapsed_s=self.elapsed_s(),
                round_s=tuple(round_s),
                run_s={role: tuple(costs) for role, costs in run_s.items()},
                steps=steps,
            )
            self.tally = tally
            stop = decide(tally)
            if stop is not None:
                break
        assert stop is not None, "decide must stop at the last round"
        return replace(stop, elapsed_s=self.elapsed_s(), order=tuple(ran))

    def finish(self, stop: Stop, plan: MeasurePlan) -> Stop:
        """Measuring is over: what the budget paid for and what interference took of it,
        the plan's notes and the set-up parts' costs, and each side's timing processes'
        steps, into each side's ``side.json``."""
        interference: Interference | None = self.watch.finish() if self.watch else None
        stop = replace(
            stop,
            spent_s=self.elapsed_s(),
            setup_s=self.setup_s,
            interference=interference,
            notes=(*(stop.notes or ()), *self.notes) or None,
            probes={**(stop.probes or {}), **self.probes} or None,
            estimate=stop.estimate or self.estimate,
        )
        for role in ROLES:
            write_doc(self.out / role / SIDE_FILE, self.record(role, stop, plan))
        return stop

    def record(self, role: Role, stop: Stop, plan: MeasurePlan) -> MeasureRecord:
        """How measuring ``role`` ended (its ``side.json``)."""
        timing = self.timing.get(role)
        if timing is not None and self.tally is not None:
            ran = [len(b.metrics.step_samples_s) for b in self.tally.done[role] if b.metrics]
            timing = replace(timing, ran=tuple(ran))
        return MeasureRecord(stop=stop, plan=plan, timing=timing)

    def sides(
        self, stop: Stop, plan: MeasurePlan, compliance: dict[str, Bundle] | None = None
    ) -> ByRole[SideRuns]:
        """Each side as measured, in memory: the rounds' repeats, the target's
        ``compliance`` runs and how measuring ended (``finish``'s ``stop``)."""

        def side(role: Role, extra: dict[str, Bundle]) -> SideRuns:
            runs = tuple(self.measured.get(role, ()))
            info = self.record(role, stop, plan)
            return SideRuns(path=self.out / role, repeats=runs, compliance=extra, info=info)

        return ByRole(baseline=side("baseline", {}), target=side("target", compliance or {}))
