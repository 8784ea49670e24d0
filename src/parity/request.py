"""One request per comparison: built from the CLI, a plan file, Python keyword arguments
or a stored ``request.json``, and validated once, here.

Every input surface fills the same ``CompareOptions`` (raw values, all optional) and
``CompareRequest.from_options`` turns them into a typed, validated request: side specs
parsed (``SpecError``), the workload named (``WorkloadError``), every value checked for
type, finiteness and its declared range by ``parity.options`` (``OptionError``). A plan
file's values come first and the options given beside it replace them
(``CompareOptions.merged``). Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from parity.devices.names import check_device_name
from parity.errors import OptionError, PlanError, ResumeError, UsageError
from parity.fair_options import parse_production, parse_slo
from parity.model.codec import decode, encode, loads
from parity.model.job import Mode, Torchrun
from parity.model.side import MeasurePlan
from parity.model.verdict import MIN_COSINE, MIN_TOP1, CostInputs, JudgeInputs
from parity.options import (
    COST_KNOBS,
    allowed_differences,
    checked_pins,
    default_target,
    flag,
    optional_int,
    parse_tracking_uri,
    show,
    whole_numbers,
)
from parity.options import CompareOptions as CompareOptions  # re-exported
from parity.options import check_number as check_number  # re-exported, as are the next
from parity.options import parse_batch_sizes as parse_batch_sizes
from parity.options import parse_duration as parse_duration
from parity.options import parse_price as parse_price
from parity.spec import (
    SideSpec,
    WorkloadSpec,
    check_generate_loop,
    parse_generate_loop,
    parse_overrides,
    parse_side,
    parse_task,
)

REQUEST_FILE = "request.json"
WORKLOAD_OPTIONS = (
    *("workload", "size", "batch_size", "seq_len", "steps", "seed", "task", "data"),
    "generate_loop",
)


def _workload(o: CompareOptions) -> WorkloadSpec | None:
    from parity.workloads.names import check_workload_name

    if o.script:
        given = [name for name in WORKLOAD_OPTIONS if getattr(o, name) is not None]
        if given or o.hf_config or o.batch_sizes is not None:
            named = [f"the workload {show(o.workload)}"] if o.workload is not None else []
            named += ["--" + n.replace("_", "-") for n in given if n != "workload"]
            raise OptionError(
                f"{', '.join(named) or 'workload options'} cannot go with a script after --: "
                "the script brings its own model and data; pass its options after --"
            )
        return None
    name = "gpt-train" if o.workload is None else o.workload
    check_workload_name(name)
    return WorkloadSpec(
        name=name,
        size=o.size or "tiny",
        batch_size=optional_int("--batch-size", o.batch_size),
        seq_len=optional_int("--seq-len", o.seq_len),
        steps=optional_int("--steps", o.steps),
        seed=optional_int("--seed", o.seed, low=0) or 0,
        overrides=parse_overrides(o.hf_config),
        task=parse_task(o.task),
        data=o.data,
        generate_loop=parse_generate_loop(o.generate_loop),
    )


def _side(option: str, text: object, nproc: int | None) -> SideSpec:
    if not isinstance(text, str):
        raise OptionError(f"{option} must be a side spec string such as cpu+bf16, got {show(text)}")
    side = parse_side(text)
    check_device_name(side.device, text)
    if nproc is not None and side.nproc is None and nproc > 1:
        side = replace(side, nproc=nproc)
    return side


def _checkscript_argv(argv: Sequence[str], *sides: SideSpec) -> None:
    """A script command that exists and sides script mode can apply from outside."""
    from parity.workloads.script import check_side, parse_command

    parse_command(argv)
    for side in sides:
        check_side(side)


def _measure(o: CompareOptions) -> MeasurePlan:
    base = MeasurePlan()
    nnodes = optional_int("--nnodes", o.nnodes) or 1
    return MeasurePlan(
        repeats=optional_int("--repeats", o.repeats),
        precision=base.precision
        if o.precision is None
        else check_number("--precision", o.precision, low=0, low_open=True, high=0.999),
        budget_s=base.budget_s
        if o.budget_s is None
        else check_number("--budget", o.budget_s, low=0, low_open=True),
        compliance=base.compliance if o.compliance is None else flag("compliance", o.compliance),
        timeout_s=base.timeout_s
        if o.timeout_s is None
        else check_number("--timeout", o.timeout_s, low=1),
        torchrun=Torchrun(nnodes=nnodes, rdzv_endpoint=o.rdzv_endpoint or None),
    )


def judge_inputs(o: CompareOptions) -> JudgeInputs:
    """The judge's inputs from the options (allowed differences, target loss, prices)."""
    unknown = sorted(set(o.cost) - set(COST_KNOBS))
    if unknown:
        raise OptionError(
            f"cost.{unknown[0]} is not a cost setting: use one of {', '.join(COST_KNOBS)}"
        )
    knobs: dict[str, Any] = {}
    for key, value in o.cost.items():
        if key == "run_steps":
            knobs[key] = optional_int("cost.run_steps", value)
        else:
            high = 0.999 if key == "idle_fraction" else None
            knobs[key] = float(check_number(f"cost.{key}", value, low=0, high=high))
    target_loss = None if o.target_loss is None else check_number("--target-loss", o.target_loss)
    for role in o.prices:
        if role not in ("baseline", "target"):
            raise OptionError(f"a price for {role!r}: prices are for the baseline or the target")
    return JudgeInputs(
        allow=allowed_differences(o.allow_diff),
        target_loss=float(target_loss) if target_loss is not None else None,
        cost=CostInputs(prices=dict(o.prices), **knobs),
        operational={k: str(v) for k, v in o.operational.items()},
        pins=checked_pins(o.pins),
        min_cosine=_threshold("min_cosine", o.min_cosine, MIN_COSINE),
        min_top1=_threshold("min_top1", o.min_top1, MIN_TOP1),
        production=parse_production(o.production),
        slo=parse_slo(o.slo),
        tuning_intended=(o.tuning_intended or "").strip() or None,
    )


def _threshold(name: str, value: object, default: float) -> float:
    """An agreement gate's threshold, in (0, 1]."""
    if value is None:
        return default
    return float(check_number(f"quality.{name}", value, low=0, low_open=True, high=1))


@dataclass(frozen=True, kw_only=True, slots=True)
class MlflowLog:
    """Where a finished comparison is logged as an MLflow run."""

    #: None: MLflow's own default (``MLFLOW_TRACKING_URI``, else ``./mlruns``)
    tracking_uri: str | None = None
    experiment: str = "parity"

    @classmethod
    def of(cls, uri: str | None, experiment: str | None) -> MlflowLog | None:
        if uri is None:
            if experiment is not None:
                raise OptionError("--mlflow-experiment needs --mlflow: add --mlflow [URI]")
            return None
        name = "parity" if experiment is None else experiment.strip()
        if not name or len(name) > 500:
            raise OptionError(
                f"--mlflow-experiment {show(experiment)} must be a name of 1 to 500 characters"
            )
        return cls(tracking_uri=parse_tracking_uri(uri) or None, experiment=name)


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
    #: log the finished comparison as an MLflow run (None: do not)
    mlflow: MlflowLog | None = None

    @classmethod
    def from_options(cls, o: CompareOptions) -> CompareRequest:
        """Validate every option once; the errors name the option and the fix."""
        nproc = optional_int("--nproc", o.nproc)
        baseline = _side("--baseline", o.baseline or "cpu", nproc)
        workload = _workload(o)
        measure = _measure(o)
        judge = judge_inputs(o)
        batch_sizes = () if o.batch_sizes is None else parse_batch_sizes(o.batch_sizes)
        if batch_sizes and o.batch_size is not None:
            raise OptionError("give --batch-size or --batch-sizes, not both")
        target_text = o.target if o.target is not None else default_target()
        target = _side("--target", target_text, nproc)
        check_generate_loop(workload, baseline, target)
        if o.script:
            _checkscript_argv(o.script, baseline, target)
        return cls(
            workload=workload,
            script=tuple(o.script),
            baseline=baseline,
            target=target,
            out=o.out,
            measure=measure,
            judge=judge,
            checks=tuple(o.checks),
            batch_sizes=batch_sizes,
            mlflow=MlflowLog.of(o.mlflow, o.mlflow_experiment),
        )

    @classmethod
    def from_plan(cls, path: Path, given: CompareOptions | None = None) -> CompareRequest:
        """A plan file's settings, with the options given beside it replacing them."""
        from parity.plan import load_plan

        options = load_plan(path)
        try:
            plain = cls.from_options(options)
        except UsageError as exc:  # a value of the file itself: name the file
            raise PlanError(f"{path}: {exc}") from None
        return cls.from_options(options.merged(given)) if given is not None else plain

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> CompareRequest:
        """The Python API's keyword arguments (``parity.compare(...)``)."""
        return cls.from_options(CompareOptions.from_kwargs(**kwargs))

    @classmethod
    def from_file(cls, out: Path) -> CompareRequest:
        """The request an interrupted comparison stored in ``OUT/request.json``."""
        path = out / REQUEST_FILE
        try:
            if not path.is_file():
                raise ResumeError(
                    f"{out} holds no {REQUEST_FILE}: pass --resume the output directory of an "
                    "interrupted parity compare"
                )
            request = decode(cls, loads(path.read_text()))
            request.check_ranges()
        except (OSError, ValueError, RecursionError, UsageError) as exc:
            if isinstance(exc, ResumeError):
                raise
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise ResumeError(
                f"{path} is not a valid request ({why}): rerun the comparison"
            ) from None
        return request

    def check_ranges(self) -> None:
        """Every number in its declared range and the devices known: what ``from_options``
        checks, for a request decoded from a file (OptionError naming the option)."""
        w, m = self.workload, self.measure
        if w is not None:
            knobs = (("--batch-size", w.batch_size), ("--seq-len", w.seq_len), ("--steps", w.steps))
            for name, value in knobs:
                optional_int(name, value)
            optional_int("--seed", w.seed, low=0)
        optional_int("--repeats", m.repeats)
        check_number("--precision", m.precision, low=0, low_open=True, high=0.999)
        check_number("--budget", m.budget_s, low=0, low_open=True)
        check_number("--timeout", m.timeout_s, low=1)
        optional_int("--nnodes", m.torchrun.nnodes)
        for side in (self.baseline, self.target):
            check_device_name(side.device, str(side))
            optional_int("--nproc", side.nproc)
        for size in self.batch_sizes:
            check_number("--batch-sizes", size, integer=True, low=1)
        if self.mlflow is not None:
            MlflowLog.of(self.mlflow.tracking_uri or "", self.mlflow.experiment)
        if self.judge.target_loss is not None:
            check_number("--target-loss", self.judge.target_loss)
        checked_pins(self.judge.pins)
        for price in self.judge.cost.prices.values():
            check_number("--price", price.usd_per_hour, low=0, low_open=True)
            check_number("--price accelerators", price.accelerators, integer=True, low=1)

    def with_batch_size(self, batch_size: int) -> CompareRequest:
        assert self.workload is not None
        return replace(self, workload=replace(self.workload, batch_size=batch_size), batch_sizes=())

    def save(self, out: Path) -> None:
        """``OUT/request.json``, a script's command as recorded (secret values masked)."""
        from parity.bundle import write_json
        from parity.redact import redactor

        stored = replace(self, script=redactor().argv(self.script))
        write_json(out / REQUEST_FILE, encode(stored))


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

    @property
    def name(self) -> str:
        if self.workload is not None:
            return self.workload.name
        from parity.workloads.script import parse_command

        return parse_command(self.script).name

    @property
    def job_mode(self) -> Mode:
        if self.mode == "scan":
            return "scan"
        return "script" if self.script else "measure"

    @classmethod
    def from_options(
        cls, o: CompareOptions, *, side: object, mode: Literal["run", "scan"]
    ) -> RunRequest:
        """``side`` is the ``--device`` spec; ``o`` the workload and run options."""
        if o.workload is None and not o.script:
            raise OptionError(
                f"parity {mode} needs a workload (e.g. mlp-train)"
                + (" or a script after --" if mode == "run" else "")
            )
        nproc = optional_int("--nproc", o.nproc)
        spec = _side("--device", side, nproc)
        workload = _workload(o)
        if mode == "scan" and workload is None:
            raise OptionError("parity scan takes a workload, not a script after --")
        if workload is None and o.out is None and mode == "run":
            raise OptionError("parity run needs --out DIR for the bundle")
        check_generate_loop(workload, spec)
        if o.script:
            _checkscript_argv(o.script, spec)
        measure = _measure(o)
        return cls(
            workload=workload,
            script=tuple(o.script),
            side=spec,
            out=o.out,
            timeout_s=measure.timeout_s,
            torchrun=measure.torchrun,
            mode=mode,
        )


CheckName = Literal["rollback", "recovery", "soak"]
#: soak bounds: drift per hour, host and device growth in MiB/min, the warm-up fraction
DEFAULT_MAX_DRIFT = 0.10
DEFAULT_MAX_GROWTH_MIB = 1.0
DEFAULT_WARMUP = 0.1


def _check_side(option: str, text: object) -> SideSpec:
    side = _side(option, text, None)
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

    @classmethod
    def from_options(
        cls,
        check: CheckName,
        o: CompareOptions,
        *,
        side: object,
        baseline: object = None,
        k: object = None,
        m: object = None,
        duration: str | None = None,
        bounds: Mapping[str, object] | None = None,
    ) -> CheckRequest:
        workload = _workload(o)
        if workload is None:
            raise OptionError(f"parity check {check} takes a workload, not a script")
        bounds = dict(bounds or {})
        unknown = sorted(
            set(bounds) - {"max_drift", "max_host_growth", "max_device_growth", "warmup"}
        )
        if unknown:
            raise OptionError(f"{unknown[0]} is not a soak bound")
        values = {
            key: float(
                check_number(
                    f"--{key.replace('_', '-')}",
                    v,
                    low=0,
                    low_open=key != "warmup",
                    high=0.9 if key == "warmup" else None,
                )
            )
            for key, v in bounds.items()
        }
        target = _check_side("--target" if check == "rollback" else "--device", side)
        check_generate_loop(workload, target)
        return cls(
            check=check,
            workload=workload,
            target=target,
            baseline=_check_side("--baseline", baseline or "cpu") if check == "rollback" else None,
            k=optional_int("--k", k),
            m=optional_int("--m", m),
            duration_s=parse_duration(duration or "10m") if check == "soak" else None,
            out=o.out,
            timeout_s=_measure(o).timeout_s,
            **values,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ScaleRequest:
    """``parity scale``: one side at several process counts, as torchrun jobs."""

    workload: WorkloadSpec
    side: SideSpec
    counts: tuple[int, ...]
    out: str | None = None
    timeout_s: float = 900.0
    torchrun: Torchrun = field(default_factory=Torchrun)

    @classmethod
    def from_options(cls, o: CompareOptions, *, side: object, counts: str) -> ScaleRequest:
        workload = _workload(o)
        if workload is None:
            raise OptionError("parity scale takes a workload, not a script")
        spec = _side("--device", side, None)
        if spec.nproc is not None:
            raise OptionError(
                f"side {spec} already sets nproc: drop it, --scaling chooses the process counts"
            )
        items = whole_numbers("--scaling process counts", counts, "1,2,4")
        if not items:
            raise OptionError(f"--scaling {show(counts)} names no process count, e.g. 1,2,4")
        measure = _measure(o)
        return cls(
            workload=workload,
            side=spec,
            counts=tuple(sorted(set(items))),
            out=o.out,
            timeout_s=measure.timeout_s,
            torchrun=measure.torchrun,
        )
