"""One request per command, built from the options given by one function each, for the
command line and the Python API alike; ``CompareRequest`` is also read back from a
stored ``request.json``.

The options are read by the option table (``parity.request.options``: each value checked for
type and range once, named as its surface spells it); here, what holds across them:
the workload or a script, the sides (``--nproc`` into each), defaults, and pairs that
exclude each other. A plan file's values come first and the options given beside it
replace them (``Given.merged``). Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from parity.cluster.address import cluster_plan
from parity.errors import OptionError, PlanError, ResumeError, UsageError
from parity.model.codec import decode, encode, loads, omit_none
from parity.model.inputs import JudgeInputs
from parity.model.job import Torchrun
from parity.model.placement import ClusterPlan
from parity.model.side import MeasurePlan
from parity.model.spec import (
    SideSpec,
    WorkloadSpec,
    check_generate_loop,
    parse_generate_loop,
    parse_overrides,
    parse_task,
)
from parity.request import options as o
from parity.request.options import Given
from parity.request.values import default_target as default_target  # tests replace it here
from parity.request.values import show

REQUEST_FILE = "request.json"
WORKLOAD_OPTIONS = (
    o.SIZE, o.BATCH_SIZE, o.SEQ_LEN, o.STEPS, o.SEED, o.TASK, o.DATA, o.GENERATE_LOOP
)  # fmt: skip


def _cluster(g: Given, roles: tuple[str, ...] = ("baseline", "target")) -> ClusterPlan | None:
    """``--cluster``, ``--place``, ``--wait`` and ``--node-retries`` together (a script
    runs on this machine only)."""
    if g.has(o.CLUSTER) and g.has(o.SCRIPT):
        raise OptionError("--cluster runs workloads, not scripts: drop --cluster or the script")
    return cluster_plan(
        g.get(o.CLUSTER), g.get(o.PLACE), roles, wait_s=g.get(o.WAIT), retries=g.get(o.NODE_RETRIES)
    )


def _out(out: str | None) -> str | None:
    """``--out`` as given, refused at once where nothing could be written there."""
    if out is not None:
        from parity.paths import check_writable

        check_writable(out, "--out", kind="directory")
    return out


def _workload(g: Given) -> WorkloadSpec | None:
    from parity.workloads.names import DEFAULT as DEFAULT_WORKLOAD
    from parity.workloads.names import check_data, check_workload_name

    if g.has(o.SCRIPT):
        given = [opt.flag for opt in (*WORKLOAD_OPTIONS, o.HF_CONFIG, o.BATCH_SIZES) if g.has(opt)]
        if given or g.has(o.WORKLOAD):
            named = [f"the workload {show(g.get(o.WORKLOAD))}"] if g.has(o.WORKLOAD) else []
            raise OptionError(
                f"{', '.join(named + given)} cannot go with a script after --: "
                "the script brings its own model and data; pass its options after --"
            )
        return None
    name = g.value(o.WORKLOAD, DEFAULT_WORKLOAD)
    check_workload_name(name)
    spec = WorkloadSpec(
        name=name,
        size=g.get(o.SIZE) or "tiny",
        batch_size=g.get(o.BATCH_SIZE),
        seq_len=g.get(o.SEQ_LEN),
        steps=g.get(o.STEPS),
        seed=g.get(o.SEED) or 0,
        overrides=parse_overrides(g.get(o.HF_CONFIG)),
        task=parse_task(g.get(o.TASK)),
        data=g.get(o.DATA),
        generate_loop=parse_generate_loop(g.get(o.GENERATE_LOOP)),
    )
    check_data(name, spec.data)
    return spec


def _with_nproc(side: SideSpec, nproc: int | None) -> SideSpec:
    if nproc is not None and side.nproc is None and nproc > 1:
        return replace(side, nproc=nproc)
    return side


def _check_script(argv: tuple[str, ...], *sides: SideSpec) -> None:
    """A script command that exists and sides script mode can apply from outside."""
    from parity.workloads.script import check_side, parse_command

    parse_command(argv)
    for side in sides:
        check_side(side)


def _measure(g: Given) -> MeasurePlan:
    base = MeasurePlan()
    budget = g.value(o.BUDGET, base.budget_s)
    return MeasurePlan(
        repeats=g.get(o.REPEATS),
        precision=g.value(o.PRECISION, base.precision),
        budget_s=budget,
        budget_given=g.has(o.BUDGET),
        compliance=g.value(o.COMPLIANCE, base.compliance),
        timeout_s=g.value(o.TIMEOUT, base.timeout_s),
        timeout_given=g.has(o.TIMEOUT),
        torchrun=Torchrun(nnodes=g.value(o.NNODES, 1), rdzv_endpoint=g.get(o.RDZV) or None),
    )


def judge_inputs(g: Given) -> JudgeInputs:
    """The judge's inputs from the options (allowed differences, target loss, prices...),
    each at its place in the table."""
    return g.placed(JudgeInputs(), "judge")


@dataclass(frozen=True, kw_only=True, slots=True)
class MlflowLog:
    """Where a finished comparison is logged as an MLflow run."""

    #: None: MLflow's own default (``MLFLOW_TRACKING_URI``, else ``./mlruns``)
    tracking_uri: str | None = None
    experiment: str = "parity"

    @classmethod
    def of(cls, g: Given) -> MlflowLog | None:
        uri = g.get(o.MLFLOW)
        if uri is None:
            if g.has(o.MLFLOW_EXPERIMENT):
                raise OptionError("--mlflow-experiment needs --mlflow: add --mlflow [URI]")
            return None
        return cls(tracking_uri=uri or None, experiment=g.value(o.MLFLOW_EXPERIMENT, "parity"))


@dataclass(frozen=True, kw_only=True, slots=True)
class CompareRequest:
    """Everything a comparison needs, validated: what to run (a workload or a script),
    the two sides, how much to measure, and how to judge it."""

    workload: WorkloadSpec | None
    script: tuple[str, ...] = ()
    baseline: SideSpec
    target: SideSpec
    out: str | None = None
    measure: MeasurePlan = field(default_factory=MeasurePlan)
    judge: JudgeInputs = field(default_factory=JudgeInputs)
    checks: tuple[str, ...] = ()
    batch_sizes: tuple[int, ...] = ()
    #: write ``OUT/report.html`` after the verdict (``parity report OUT`` makes it later)
    report: bool = True
    #: log the finished comparison as an MLflow run (None: do not)
    mlflow: MlflowLog | None = None
    #: run each side on a node of a Ray cluster (None: on this machine)
    cluster: ClusterPlan | None = omit_none()

    @classmethod
    def build(cls, g: Given) -> CompareRequest:
        """The request the options describe; the errors name the option and the fix."""
        nproc = g.get(o.NPROC)
        baseline = _with_nproc(g.get(o.BASELINE) or o.side("--baseline", "cpu"), nproc)
        workload = _workload(g)
        batch_sizes = g.value(o.BATCH_SIZES, ())
        if batch_sizes and g.has(o.BATCH_SIZE):
            raise OptionError("give --batch-size or --batch-sizes, not both")
        target = g.get(o.TARGET) or o.side("--target", default_target())
        target = _with_nproc(target, nproc)
        check_generate_loop(workload, baseline, target)
        script = g.value(o.SCRIPT, ())
        if script:
            _check_script(script, baseline, target)
        return cls(
            workload=workload,
            script=script,
            baseline=baseline,
            target=target,
            out=_out(g.get(o.OUT)),
            measure=_measure(g),
            judge=judge_inputs(g),
            checks=g.value(o.CHECKS_DIRS, ()),
            batch_sizes=batch_sizes,
            report=g.value(o.REPORT, True),
            mlflow=MlflowLog.of(g),
            cluster=_cluster(g),
        )

    @classmethod
    def from_plan(cls, path: Path, given: Given | None = None) -> CompareRequest:
        """A plan file's settings, with the options given beside it replacing them."""
        from parity.request.plan import load_plan

        planned = load_plan(path)
        merged = planned.merged(given) if given is not None else planned
        try:
            return cls.build(merged)
        except UsageError as exc:
            try:  # a plan may hold a part only (``[production]``), the rest given beside it
                cls.build(planned)
            except UsageError as alone:
                if str(alone) == str(exc):  # a value of the file itself: name the file
                    raise PlanError(f"{path}: {exc}") from None
            raise

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> CompareRequest:
        """The Python API's keyword arguments (``parity.compare(...)``)."""
        return cls.build(Given.read("compare", kwargs, "kwargs"))

    @classmethod
    def from_file(cls, out: Path) -> CompareRequest:
        """The request an interrupted comparison stored in ``OUT/request.json``, read
        back through the option table (each value checked as when it was given)."""
        path = out / REQUEST_FILE
        try:
            if not path.is_file():
                raise ResumeError(
                    f"{out} holds no {REQUEST_FILE}: pass --resume the output directory of an "
                    "interrupted parity compare"
                )
            stored = decode(cls, loads(path.read_text()))
            again = cls.build(Given.stored("compare", stored))
            if again != stored:
                raise ValueError("its values do not make the request it holds")
        except (OSError, ValueError, RecursionError, UsageError) as exc:
            if isinstance(exc, ResumeError):
                raise
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise ResumeError(
                f"{path} is not a valid request ({why}): rerun the comparison"
            ) from None
        return stored

    def check_resume(self, out: Path) -> None:
        """``--resume`` with other options is refused when they differ from the stored
        ones (a script's command compared as stored: secret values masked)."""
        from parity.safety.redact import redactor

        stored = CompareRequest.from_file(out)
        given = replace(self, out=stored.out, script=redactor().argv(self.script))
        if given != stored:
            raise ResumeError(
                f"--resume {out} runs the comparison stored in {out / REQUEST_FILE}: drop the "
                "other options (they differ from the stored ones)"
            )

    def with_batch_size(self, batch_size: int) -> CompareRequest:
        assert self.workload is not None
        return replace(self, workload=replace(self.workload, batch_size=batch_size), batch_sizes=())

    def save(self, out: Path) -> None:
        """``OUT/request.json``, a script's command as recorded (secret values masked)."""
        from parity.bundle import write_json
        from parity.safety.redact import redactor

        stored = replace(self, script=redactor().argv(self.script))
        write_json(out / REQUEST_FILE, encode(stored))


def compare_request(
    given: Given, plan: Path | None = None, resume: Path | None = None
) -> CompareRequest:
    """The one way to a comparison's request, for the command line and the Python API:
    the options (over a plan file's, with ``plan``); with ``resume`` alone, the stored
    request, which options given beside it must match."""
    if resume is not None and plan is None and not given.values:
        return CompareRequest.from_file(resume)
    if plan is not None:
        request = CompareRequest.from_plan(plan, given)
    else:
        request = CompareRequest.build(given)
    if resume is not None:
        request.check_resume(resume)
    return request


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRequest:
    """One side, once: ``parity run`` (timed steps and the numerics probe) or ``parity
    scan`` (the op scan instead of timed steps), of a workload or a script."""

    workload: WorkloadSpec | None
    script: tuple[str, ...] = ()
    side: SideSpec
    out: str | None = None
    timeout_s: float = 900.0
    torchrun: Torchrun = field(default_factory=Torchrun)
    mode: Literal["run", "scan"] = "run"
    #: run the side on a node of a Ray cluster (``--place run=...`` / ``scan=...``)
    cluster: ClusterPlan | None = omit_none()

    @property
    def name(self) -> str:
        if self.workload is not None:
            return self.workload.name
        from parity.workloads.script import parse_command

        return parse_command(self.script).name

    @classmethod
    def build(cls, g: Given) -> RunRequest:
        """``parity run`` or ``parity scan`` (``g.command``) from its options."""
        mode: Literal["run", "scan"] = "scan" if g.command == "scan" else "run"
        script = g.value(o.SCRIPT, ())
        if not g.has(o.WORKLOAD) and not script:
            raise OptionError(
                f"parity {mode} needs a workload (e.g. mlp-train)"
                + (" or a script after --" if mode == "run" else "")
            )
        side = _with_nproc(_required_side(g, o.DEVICE), g.get(o.NPROC))
        workload = _workload(g)
        if workload is None and not g.has(o.OUT) and mode == "run":
            raise OptionError("parity run needs --out DIR for the bundle")
        check_generate_loop(workload, side)
        if script:
            _check_script(script, side)
        measure = _measure(g)
        return cls(
            workload=workload,
            script=script,
            side=side,
            out=_out(g.get(o.OUT)),
            timeout_s=measure.timeout_s,
            torchrun=measure.torchrun,
            mode=mode,
            cluster=_cluster(g, (mode,)),
        )

    @classmethod
    def from_kwargs(cls, mode: Literal["run", "scan"] = "run", **kwargs: Any) -> RunRequest:
        return cls.build(Given.read(mode, kwargs, "kwargs"))


def _required_side(g: Given, option: o.Option[SideSpec]) -> SideSpec:
    found = g.get(option)
    if found is None:
        raise OptionError(f"parity {g.command} needs {option.flag} SIDE, e.g. {option.flag} cpu")
    return found


CheckName = Literal["rollback", "recovery", "soak"]
#: the roles ``--place`` names for each check (recovery runs on this machine)
PLACED_ROLES: dict[CheckName, tuple[str, ...]] = {
    "rollback": ("baseline", "target"),
    "recovery": (),
    "soak": ("soak",),
}
#: soak bounds: drift per hour, host and device growth in MiB/min, the warm-up fraction
DEFAULT_MAX_DRIFT = 0.10
DEFAULT_MAX_GROWTH_MIB = 1.0
DEFAULT_WARMUP = 0.1


def _one_process(option: str, side: SideSpec) -> SideSpec:
    if side.nproc is not None:
        raise OptionError(
            f"{option} {side} runs {side.nproc} processes: the checks run one process per "
            "part; drop nproc"
        )
    return side


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckRequest:
    """``parity check rollback | recovery | soak``: the workload, the side(s), the steps
    around the checkpoint (rollback, recovery) or the duration and bounds (soak)."""

    check: CheckName
    workload: WorkloadSpec
    #: rollback: the side that trains first; recovery and soak: the side checked
    target: SideSpec
    #: rollback: the side that resumes
    baseline: SideSpec | None = None
    k: int | None = None
    m: int | None = None
    duration_s: float | None = None
    max_drift: float = DEFAULT_MAX_DRIFT
    max_host_growth: float = DEFAULT_MAX_GROWTH_MIB
    max_device_growth: float = DEFAULT_MAX_GROWTH_MIB
    warmup: float = DEFAULT_WARMUP
    out: str | None = None
    timeout_s: float = 900.0
    #: rollback and soak: run the sides on nodes of a Ray cluster (``--place baseline=...
    #: --place target=...``, ``--place soak=...``)
    cluster: ClusterPlan | None = omit_none()

    @classmethod
    def build(cls, g: Given) -> CheckRequest:
        """``parity check rollback | recovery | soak`` (``g.command``) from its options."""
        check: CheckName = (
            "rollback" if g.command == "rollback" else "soak" if g.command == "soak" else "recovery"
        )
        workload = _workload(g)
        if workload is None:
            raise OptionError(f"parity check {check} takes a workload, not a script")
        chosen = o.TARGET if check == "rollback" else o.DEVICE
        target = _one_process(chosen.flag, _required_side(g, chosen))
        check_generate_loop(workload, target)
        baseline = g.get(o.BASELINE) or o.side("--baseline", "cpu")
        return cls(
            check=check,
            workload=workload,
            target=target,
            baseline=_one_process("--baseline", baseline) if check == "rollback" else None,
            k=g.get(o.K),
            m=g.get(o.M),
            duration_s=g.value(o.DURATION, 600.0) if check == "soak" else None,
            max_drift=g.value(o.MAX_DRIFT, DEFAULT_MAX_DRIFT),
            max_host_growth=g.value(o.MAX_HOST_GROWTH, DEFAULT_MAX_GROWTH_MIB),
            max_device_growth=g.value(o.MAX_DEVICE_GROWTH, DEFAULT_MAX_GROWTH_MIB),
            warmup=g.value(o.WARMUP, DEFAULT_WARMUP),
            out=_out(g.get(o.OUT)),
            timeout_s=_measure(g).timeout_s,
            cluster=_cluster(g, PLACED_ROLES[check]),
        )

    @classmethod
    def from_kwargs(cls, check: CheckName, **kwargs: Any) -> CheckRequest:
        return cls.build(Given.read(check, kwargs, "kwargs"))


@dataclass(frozen=True, kw_only=True, slots=True)
class ScaleRequest:
    """``parity scale``: one side at several process counts, as torchrun jobs."""

    workload: WorkloadSpec
    side: SideSpec
    counts: tuple[int, ...]
    out: str | None = None
    timeout_s: float = 900.0
    torchrun: Torchrun = field(default_factory=Torchrun)
    #: run every count on one node of a Ray cluster (``--place scale=...``)
    cluster: ClusterPlan | None = omit_none()

    @classmethod
    def build(cls, g: Given) -> ScaleRequest:
        workload = _workload(g)
        if workload is None:
            raise OptionError("parity scale takes a workload, not a script")
        spec = _required_side(g, o.DEVICE)
        if spec.nproc is not None:
            raise OptionError(
                f"side {spec} already sets nproc: drop it, --scaling chooses the process counts"
            )
        measure = _measure(g)
        return cls(
            workload=workload,
            side=spec,
            counts=g.value(o.SCALING, (1, 2)),
            out=_out(g.get(o.OUT)),
            timeout_s=measure.timeout_s,
            torchrun=measure.torchrun,
            cluster=_cluster(g, ("scale",)),
        )

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> ScaleRequest:
        return cls.build(Given.read("scale", kwargs, "kwargs"))
