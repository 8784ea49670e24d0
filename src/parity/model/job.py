"""What a parent hands a worker (``job.json``), and what a worker says back.

The job crosses the process boundary as JSON and is decoded once, typed, by the worker:
the side spec is a ``SideSpec``, and the job's one plan (``Job.plan``) a dataclass of its
mode's own, told apart by its ``mode`` tag (``JobPlan``): a job cannot carry two modes'
settings, or none. A bundle's ``job.json`` written before the plan was one field (its
``mode`` and each mode's settings side by side in the job) is read through
``upgrade_job``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeVar

from parity.model.codec import Json, omit_none
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.workload import FingerprintParts, WorkloadDescription, WorkloadRef

JOB_FILE = "job.json"
ERROR_FILE = "error.json"
EVENTS_FILE = "events.jsonl"
P = TypeVar("P")

#: what a worker does with its side: time steps (``measure``), the fp64 reference, the
#: expected-error run (the workload on the CPU at the target's precision), the op scan, a
#: checkpointed training part, a soak, an instrumented user script, or resolving and
#: freezing a workload for the parent (``freeze``: user code runs only in workers)
Mode = Literal["measure", "reference", "expected", "scan", "train_ckpt", "soak", "script", "freeze"]


@dataclass(frozen=True, kw_only=True, slots=True)
class StepCut:
    """A timing process's steps end early where they run far slower than its side's quality
    run said (a machine that stalls one process's threads for its whole life): once its
    steps after the first have taken ``after_s`` seconds and ``at_least`` steps are in."""

    after_s: float
    at_least: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Torchrun:
    """How a side runs under torchrun: the side's ``nproc`` and these multi-node settings."""

    nnodes: int = 1
    rdzv_endpoint: str | None = None

    def __post_init__(self) -> None:
        if self.nnodes < 1:
            raise ValueError(f"--nnodes must be at least 1, got {self.nnodes}")


@dataclass(frozen=True, kw_only=True, slots=True)
class TimingPlan:
    """``measure`` mode: a side's timed steps (a quality run, a timing process, a
    compliance run, ``parity run``'s one run)."""

    mode: Literal["measure"] = "measure"
    #: run the numerics probe (first repeat of a comparison, a single run)
    capture: bool = False
    #: a compliance run: timing only (no FLOP count, no compile probes)
    compliance: bool = False
    #: the anti-caching compliance run: one identical input at every step
    same_input: bool = False
    #: a timing process: the first ``steps`` of the workload's steps (None: all of them)
    steps: int | None = omit_none()
    #: a timing process on one host: where its steps end early (None: never)
    cut: StepCut | None = omit_none()
    #: probes of the first repeat the plan left out to fit the budget: ``scan`` (the op
    #: scan), ``numerics probe``
    skip: tuple[str, ...] | None = omit_none()
    #: a generate workload's quality run on the target: the baseline's generated tokens of
    #: every prompt, to score teacher-forced as well (``parity.workloads.loops``), so that
    #: the sides are compared on one context after a prompt's first difference
    forced: tuple[tuple[int, ...], ...] | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class ReferencePlan:
    """``reference`` mode: the fp64 CPU reference (the whole run and the probe)."""

    mode: Literal["reference"] = "reference"


@dataclass(frozen=True, kw_only=True, slots=True)
class ExpectedPlan:
    """``expected`` mode: the whole run and the probe on the CPU at the side's precision."""

    mode: Literal["expected"] = "expected"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScanPlan:
    """``scan`` mode: the op scan instead of timed steps (``parity scan``)."""

    mode: Literal["scan"] = "scan"


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckpointPlan:
    """``train_ckpt`` mode: train steps ``start .. stop_at-1``, checkpoint after ``save_at``."""

    mode: Literal["train_ckpt"] = "train_ckpt"
    stop_at: int | None = None
    save_at: int | None = None
    checkpoint_dir: str | None = None
    resume_from: str | None = None
    #: wait this long to be killed after the last step instead of finishing (recovery)
    await_kill_s: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class SoakPlan:
    """``soak`` mode: run for ``duration_s``, summarising windows of ``window_s``."""

    mode: Literal["soak"] = "soak"
    duration_s: float
    window_s: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptPlan:
    """``script`` mode: the user's script (a file or a module) with its arguments."""

    mode: Literal["script"] = "script"
    target: str
    module: bool
    args: tuple[str, ...]
    cwd: str


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparePlan:
    """``freeze`` mode: resolve the job's workload spec and freeze it into the cache
    (``freeze``), or only describe it, or (``resolve=False``) only check the sides."""

    mode: Literal["freeze"] = "freeze"
    freeze: bool = True
    #: the sides to check first (``parity.devices.preflight``): one that cannot run here
    #: ends the job with a ``DeviceError`` before the workload is touched
    sides: tuple[SideSpec, ...] = ()
    #: time a step of the workload on the CPU for the pre-run estimate (``StepCost``)
    cost: bool = False
    #: resolve the workload at all (False: the pre-flight of ``sides`` only,
    #: ``parity.runner.prepare.preflight``)
    resolve: bool = True


#: a job's one plan: its mode's own settings, the mode its tag
JobPlan = (
    TimingPlan
    | ReferencePlan
    | ExpectedPlan
    | ScanPlan
    | CheckpointPlan
    | SoakPlan
    | ScriptPlan
    | PreparePlan
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """Everything a worker needs to run one side once."""

    role: str
    side: SideSpec
    workload: WorkloadSpec
    #: the frozen workload's directory (none in script mode)
    frozen: str | None
    fingerprint: str
    parts: FingerprintParts
    description: WorkloadDescription
    #: what the worker does, and its mode's settings (the mode is the plan's tag)
    plan: JobPlan
    repeat: int = 0
    #: ``perf_counter_ns`` in the parent when it launched the worker
    spawned_ns: int = 0
    #: how the worker was started: forked from the zygote, a new interpreter, or in the
    #: parent's own process (``runner.strategy.Inline``, tests)
    launch: Literal["fork", "spawn", "inline"] = "spawn"
    timeout_s: float = 900.0
    torchrun: Torchrun = field(default_factory=Torchrun)
    #: the sha256 of the comparison's ``request.json`` this run is part of (``--resume``
    #: reuses a bundle only for the request it was run for)
    request: str | None = omit_none()
    #: on a cluster node: the directory a user's workload file was sent to
    #: (``parity.cluster.code``); the file is imported from there, its spec unchanged
    home: str | None = omit_none()

    @property
    def mode(self) -> Mode:
        """What the worker does with its side: the plan's tag."""
        return self.plan.mode

    def plan_of(self, kind: type[P]) -> P:
        """The plan as its mode's own type (a mode's runner asks for its own: another
        mode's job reaching it is a bug)."""
        if not isinstance(self.plan, kind):
            raise TypeError(f"a {self.plan.mode} job has no {kind.__name__}")
        return self.plan

    @property
    def timing(self) -> TimingPlan:
        """A ``measure`` job's plan."""
        return self.plan_of(TimingPlan)

    @property
    def timing_only(self) -> bool:
        """A process after the side's quality run (the first), or a compliance run: its
        runner hands over what its timed steps produced and no more (``finish_timing``).
        The second's outputs are still compared with the first's for determinism, on
        the outputs both have (``parity.judge.quality.determinism``)."""
        compliance = isinstance(self.plan, TimingPlan) and self.plan.compliance
        return compliance or self.repeat >= 1

    def workload_ref(self) -> WorkloadRef:
        """What a manifest records of the job's workload (every bundle of the job, ok or
        failed, says the same)."""
        return WorkloadRef(
            spec=self.workload,
            fingerprint=self.fingerprint,
            parts=self.parts,
            description=self.description,
        )


#: before the plan was one field: each mode's settings under a key of the job's own
_LEGACY_PLANS = {
    "train_ckpt": "checkpoint",
    "soak": "soak",
    "script": "script",
    "freeze": "prepare",
}
#: ... and a ``measure`` job's settings among the job's fields
_LEGACY_TIMING = ("capture", "compliance", "same_input", "steps", "cut", "skip", "forced")


def upgrade_job(data: Json) -> Json:
    """A ``job.json`` an older parity wrote (``mode`` and each mode's settings among the
    job's fields) in today's shape (one ``plan``, its ``mode`` the tag); today's as it is.
    The settings of modes other than the job's own had no effect, and are dropped."""
    if not isinstance(data, dict) or "plan" in data or "mode" not in data:
        return data
    job = dict(data)
    mode = job.pop("mode")
    timing = {k: job.pop(k) for k in _LEGACY_TIMING if k in job}
    own = {k: job.pop(k) for k in _LEGACY_PLANS.values() if k in job}
    settings = timing if mode == "measure" else own.get(_LEGACY_PLANS.get(str(mode), ""))
    plan: dict[str, Json] = {"mode": mode}
    if isinstance(settings, dict):
        plan.update(settings)
    return {**job, "plan": plan}


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkerError:
    """``error.json``: the first exception a worker raised, and in which phase."""

    type: str
    message: str
    phase: str
    traceback: str
    #: ``file:line`` of the innermost frame in the user's own code (not torch's, a
    #: library's or parity's), where there is one: the failing line, not an outer call
    source: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One line of ``events.jsonl``: a phase change, progress, or a checkpoint saved."""

    t_ns: int
    event: Literal["phase", "progress", "checkpoint"]
    phase: str | None = omit_none()
    steps: int | None = omit_none()
    done: int | None = omit_none()
    step: int | None = omit_none()
    path: str | None = omit_none()
    pid: int | None = omit_none()
    duration_s: float | None = omit_none()
