"""One request per comparison: built from the CLI, a plan file, Python keyword arguments
or a stored ``request.json``, and validated once, here.

Every input surface fills the same ``CompareOptions`` (raw values, all optional) and
``CompareRequest.from_options`` turns them into a typed, validated request: side specs
parsed (``SpecError``), the workload named (``WorkloadError``), every number checked for
type, finiteness and range (``OptionError``). A plan file's values come first and the
options given on the command line replace them (``CompareOptions.merged``). Nothing here
imports torch: bad input is refused before any heavy import.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from parity.errors import OptionError, PlanError, ResumeError, UsageError
from parity.model.codec import DecodeError, decode, encode, loads
from parity.model.job import Mode, Torchrun
from parity.model.side import MeasurePlan
from parity.model.verdict import MIN_COSINE, MIN_TOP1, CostInputs, JudgeInputs, Price
from parity.model.workload import FingerprintParts
from parity.spec import SideSpec, WorkloadSpec, parse_overrides, parse_side, parse_task

REQUEST_FILE = "request.json"
WORKLOAD_OPTIONS = ("workload", "size", "batch_size", "seq_len", "steps", "seed", "task", "data")
COST_KNOBS = (
    "run_steps",
    "engineering_hours",
    "engineering_rate",
    "idle_fraction",
    "retry_fraction",
    "checkpoint_overhead",
)


def check_number(
    name: str,
    value: object,
    *,
    integer: bool = False,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """``value`` as a finite number in range, or OptionError naming ``name``."""
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OptionError(f"{name} must be {kind}, got {_show(value)}")
    if integer and not isinstance(value, int):
        raise OptionError(f"{name} must be {kind}, got {_show(value)}")
    if not math.isfinite(value):
        raise OptionError(f"{name} must be a finite number, got {value}")
    if low is not None and (value <= low if low_open else value < low):
        bound = f"more than {low:g}" if low_open else f"at least {low:g}"
        raise OptionError(f"{name} must be {bound}, got {value:g}")
    if high is not None and value > high:
        raise OptionError(f"{name} must be at most {high:g}, got {value:g}")
    return value


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_price(text: str) -> tuple[str, Price]:
    """``SIDE=DOLLARS_PER_HOUR[:ACCELERATORS]`` with SIDE baseline or target."""
    side, sep, rest = text.partition("=")
    side = side.strip()
    if not sep or side not in ("baseline", "target"):
        raise OptionError(
            f"--price {_show(text)}: write baseline=DOLLARS_PER_HOUR[:ACCELERATORS] or target=..."
        )
    amount, _, accel = rest.partition(":")
    try:
        usd, count = float(amount), int(accel or "1")
    except ValueError:
        raise OptionError(
            f"--price {_show(text)}: the price and accelerator count must be numbers, "
            "e.g. target=21.50:16"
        ) from None
    check_number("--price", usd, low=0, low_open=True)
    check_number("--price accelerators", count, integer=True, low=1)
    return side, Price(usd_per_hour=usd, accelerators=count)


def parse_batch_sizes(text: str | Sequence[int]) -> tuple[int, ...]:
    """``1,8,32`` (or a list) into sorted distinct batch sizes of at least 1."""
    if isinstance(text, str):
        items = [x.strip() for x in text.split(",") if x.strip()]
        if not all(x.isascii() and x.isdigit() for x in items):
            raise OptionError(f"--batch-sizes {_show(text)} must be whole numbers, e.g. 1,8,32")
        values: Sequence[object] = [int(x) for x in items]
    else:
        values = list(text)
    sizes = sorted({int(check_number("--batch-sizes", v, integer=True, low=1)) for v in values})
    if not sizes:
        raise OptionError("--batch-sizes needs at least one batch size, e.g. 1,8,32")
    return tuple(sizes)


def _allow(items: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """``FIELD`` or ``FIELD=reason`` items (or a mapping) into field -> reason."""
    pairs: list[tuple[str, str]] = []
    if isinstance(items, Mapping):
        pairs = [(str(k), str(v)) for k, v in items.items()]
    elif items is not None:
        for item in [items] if isinstance(items, str) else items:
            name, _, reason = str(item).partition("=")
            pairs.append((name, reason))
    allow: dict[str, str] = {}
    for name, reason in pairs:
        name = name.strip()
        if name not in FingerprintParts.names():
            raise OptionError(
                f"--allow-diff {_show(name)} is not a fingerprint field: use one of "
                f"{', '.join(FingerprintParts.names())}"
            )
        allow[name] = reason.strip().strip('"') or "allowed by the user (no reason given)"
    return allow


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    """The options of a comparison as given, before validation (None: not given)."""

    workload: str | None = None
    script: tuple[str, ...] = ()
    size: str | None = None
    batch_size: object = None
    seq_len: object = None
    steps: object = None
    seed: object = None
    hf_config: tuple[str, ...] = ()
    task: str | None = None
    data: str | None = None
    baseline: str | None = None
    target: str | None = None
    out: str | None = None
    repeats: object = None
    precision: object = None
    budget_s: object = None
    compliance: bool | None = None
    timeout_s: object = None
    nproc: object = None
    nnodes: object = None
    rdzv_endpoint: str | None = None
    allow_diff: Mapping[str, str] | Sequence[str] | None = None
    target_loss: object = None
    #: the agreement gates' thresholds: embeddings' smallest per-row cosine similarity and
    #: logits' smallest top-1 agreement with the baseline (None: the defaults, 0.99)
    min_cosine: object = None
    min_top1: object = None
    prices: Mapping[str, Price] = field(default_factory=dict)
    cost: Mapping[str, object] = field(default_factory=dict)
    operational: Mapping[str, str] = field(default_factory=dict)
    checks: tuple[str, ...] = ()
    batch_sizes: str | Sequence[int] | None = None

    def merged(self, over: CompareOptions) -> CompareOptions:
        """These options with every option ``over`` gives replacing them."""
        defaults = CompareOptions()
        changes = {
            f.name: getattr(over, f.name)
            for f in fields(self)
            if getattr(over, f.name) != getattr(defaults, f.name)
        }
        if "prices" in changes:
            changes["prices"] = {**self.prices, **over.prices}
        return replace(self, **changes)


def _optional_int(name: str, value: object, low: int = 1) -> int | None:
    return None if value is None else int(check_number(name, value, integer=True, low=low))


def _workload(o: CompareOptions) -> WorkloadSpec | None:
    from parity.workloads.names import check_workload_name

    if o.script:
        given = [name for name in WORKLOAD_OPTIONS if getattr(o, name) is not None]
        if given or o.hf_config or o.batch_sizes is not None:
            shown = ", ".join("--" + n.replace("_", "-") for n in given) or "workload options"
            raise OptionError(
                f"{shown} cannot go with a script after --: the script brings its own model "
                "and data; pass its options after --"
            )
        return None
    name = o.workload or "gpt-train"
    check_workload_name(name)
    return WorkloadSpec(
        name=name,
        size=o.size or "tiny",
        batch_size=_optional_int("--batch-size", o.batch_size),
        seq_len=_optional_int("--seq-len", o.seq_len),
        steps=_optional_int("--steps", o.steps),
        seed=_optional_int("--seed", o.seed, low=0) or 0,
        overrides=parse_overrides(o.hf_config),
        task=parse_task(o.task),
        data=o.data,
    )


def _side(option: str, text: object, nproc: int | None) -> SideSpec:
    if not isinstance(text, str):
        raise OptionError(
            f"{option} must be a side spec string such as cpu+bf16, got {_show(text)}"
        )
    side = parse_side(text)
    if nproc is not None and side.nproc is None and nproc > 1:
        side = replace(side, nproc=nproc)
    return side


def _check_script(argv: Sequence[str], *sides: SideSpec) -> None:
    """A script command that exists and sides script mode can apply from outside."""
    from parity.workloads.script import check_side, parse_command

    parse_command(argv)
    for side in sides:
        check_side(side)


def _measure(o: CompareOptions) -> MeasurePlan:
    base = MeasurePlan()
    nnodes = _optional_int("--nnodes", o.nnodes) or 1
    return MeasurePlan(
        repeats=_optional_int("--repeats", o.repeats),
        precision=base.precision
        if o.precision is None
        else check_number("--precision", o.precision, low=0, low_open=True, high=0.999),
        budget_s=base.budget_s
        if o.budget_s is None
        else check_number("--budget", o.budget_s, low=0, low_open=True),
        compliance=base.compliance if o.compliance is None else bool(o.compliance),
        timeout_s=base.timeout_s
        if o.timeout_s is None
        else check_number("--timeout", o.timeout_s, low=1),
        torchrun=Torchrun(nnodes=nnodes, rdzv_endpoint=o.rdzv_endpoint or None),
    )


def _judge_inputs(o: CompareOptions) -> JudgeInputs:
    unknown = sorted(set(o.cost) - set(COST_KNOBS))
    if unknown:
        raise OptionError(
            f"cost.{unknown[0]} is not a cost setting: use one of {', '.join(COST_KNOBS)}"
        )
    knobs: dict[str, Any] = {}
    for key, value in o.cost.items():
        if key == "run_steps":
            knobs[key] = _optional_int("cost.run_steps", value)
        else:
            high = 0.999 if key == "idle_fraction" else None
            knobs[key] = float(check_number(f"cost.{key}", value, low=0, high=high))
    target_loss = None if o.target_loss is None else check_number("--target-loss", o.target_loss)
    for role in o.prices:
        if role not in ("baseline", "target"):
            raise OptionError(f"a price for {role!r}: prices are for the baseline or the target")
    return JudgeInputs(
        allow=_allow(o.allow_diff),
        target_loss=float(target_loss) if target_loss is not None else None,
        cost=CostInputs(prices=dict(o.prices), **knobs),
        operational={k: str(v) for k, v in o.operational.items()},
        min_cosine=_threshold("min_cosine", o.min_cosine, MIN_COSINE),
        min_top1=_threshold("min_top1", o.min_top1, MIN_TOP1),
    )


def _threshold(name: str, value: object, default: float) -> float:
    """An agreement gate's threshold, in (0, 1]."""
    if value is None:
        return default
    return float(check_number(f"quality.{name}", value, low=0, low_open=True, high=1))


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

    @classmethod
    def from_options(cls, o: CompareOptions) -> CompareRequest:
        """Validate every option once; the errors name the option and the fix."""
        nproc = _optional_int("--nproc", o.nproc)
        baseline = _side("--baseline", o.baseline or "cpu", nproc)
        workload = _workload(o)
        measure = _measure(o)
        judge = _judge_inputs(o)
        batch_sizes = () if o.batch_sizes is None else parse_batch_sizes(o.batch_sizes)
        if batch_sizes and o.batch_size is not None:
            raise OptionError("give --batch-size or --batch-sizes, not both")
        target_text = o.target if o.target is not None else _default_target()
        target = _side("--target", target_text, nproc)
        if o.script:
            _check_script(o.script, baseline, target)
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
        names = {f.name for f in fields(CompareOptions)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise OptionError(
                f"parity.compare() got an unknown argument {unknown[0]!r}: use one of "
                f"{', '.join(sorted(names))}"
            )
        if isinstance(kwargs.get("data"), Path):
            kwargs["data"] = str(kwargs["data"])
        for key in ("workload", "size", "baseline", "target", "rdzv_endpoint", "task", "data"):
            value = kwargs.get(key)
            if value is not None and not isinstance(value, str):
                raise OptionError(f"{key} must be a string, got {_show(value)}")
        if "out" in kwargs and kwargs["out"] is not None:
            kwargs["out"] = str(kwargs["out"])
        for key in ("script", "hf_config", "checks"):
            if key in kwargs:
                kwargs[key] = _strings(key, kwargs[key])
        if "prices" in kwargs:
            kwargs["prices"] = _prices(kwargs["prices"])
        return cls.from_options(CompareOptions(**kwargs))

    @classmethod
    def from_file(cls, out: Path) -> CompareRequest:
        """The request an interrupted comparison stored in ``OUT/request.json``."""
        path = out / REQUEST_FILE
        if not path.is_file():
            raise ResumeError(
                f"{out} holds no {REQUEST_FILE}: --resume takes the output directory of an "
                "interrupted parity compare"
            )
        try:
            return decode(cls, loads(path.read_text()))
        except (OSError, ValueError, DecodeError) as exc:
            raise ResumeError(
                f"{path} is not a valid request ({exc}): rerun the comparison"
            ) from None

    def with_batch_size(self, batch_size: int) -> CompareRequest:
        assert self.workload is not None
        return replace(self, workload=replace(self.workload, batch_size=batch_size), batch_sizes=())

    def save(self, out: Path) -> None:
        from parity.bundle import write_json

        write_json(out / REQUEST_FILE, encode(self))


def _strings(name: str, value: object) -> tuple[str, ...]:
    """A string, a list of strings (or paths) or a mapping (``KEY=VALUE``) as strings."""
    if value is None:
        return ()
    if isinstance(value, str | Path):
        return (str(value),)
    if isinstance(value, Mapping):
        return tuple(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in value.items()
        )
    if isinstance(value, Sequence) and all(isinstance(v, str | Path) for v in value):
        return tuple(str(v) for v in value)
    raise OptionError(f"{name} must be a list of strings, got {_show(value)}")


def _prices(value: object) -> dict[str, Price]:
    if isinstance(value, Mapping):
        out: dict[str, Price] = {}
        for role, price in value.items():
            if isinstance(price, Price):
                out[str(role)] = price
            else:
                out.update([parse_price(f"{role}={price}")])
        return out
    return dict(parse_price(p) for p in _strings("prices", value))


def _default_target() -> str:
    """The accelerator PyTorch reports, or ``cpu+bf16`` on a machine without one."""
    import torch

    accel = getattr(torch, "accelerator", None)
    if accel is not None and accel.is_available():
        current = accel.current_accelerator()
        if current is not None and current.type != "cpu":
            return str(current.type)
    return "cpu+bf16"


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
        nproc = _optional_int("--nproc", o.nproc)
        spec = _side("--device", side, nproc)
        workload = _workload(o)
        if mode == "scan" and workload is None:
            raise OptionError("parity scan takes a workload, not a script after --")
        if workload is None and o.out is None and mode == "run":
            raise OptionError("parity run needs --out DIR for the bundle")
        if o.script:
            _check_script(o.script, spec)
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


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([hms])", re.ASCII)
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0}
CheckName = Literal["rollback", "recovery", "soak"]
#: soak bounds: relative latency drift per hour; host RSS and device allocated growth in
#: MiB per minute; the fraction of the run left out as warm-up
DEFAULT_MAX_DRIFT = 0.10
DEFAULT_MAX_GROWTH_MIB = 1.0
DEFAULT_WARMUP = 0.1


def parse_duration(text: str) -> float:
    """``30s``, ``10m``, ``1h``, ``1h30m``, ``1.5h`` or plain seconds, in seconds."""
    t = text.strip().lower()
    try:
        seconds = float(t) if t.isascii() else math.nan
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _DURATION.finditer(t):
            if match.start() != pos:
                break
            seconds += float(match[1]) * _UNIT_S[match[2]]
            pos = match.end()
        if pos != len(t) or not t:
            raise OptionError(
                f"--duration {_show(text)} is not a duration: use e.g. 30s, 10m, 1h or 1h30m"
            ) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise OptionError(f"--duration {_show(text)} must be more than zero, e.g. 30s")
    return seconds


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
        return cls(
            check=check,
            workload=workload,
            target=_check_side("--target" if check == "rollback" else "--device", side),
            baseline=_check_side("--baseline", baseline or "cpu") if check == "rollback" else None,
            k=_optional_int("--k", k),
            m=_optional_int("--m", m),
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
            raise OptionError(f"side {spec} already sets nproc: --scaling chooses the counts")
        items = [x.strip() for x in counts.split(",") if x.strip()]
        if not items or not all(x.isascii() and x.isdigit() and int(x) >= 1 for x in items):
            raise OptionError(
                f"--scaling {_show(counts)} must be process counts of at least 1, e.g. 1,2,4"
            )
        measure = _measure(o)
        return cls(
            workload=workload,
            side=spec,
            counts=tuple(sorted({int(x) for x in items})),
            out=o.out,
            timeout_s=measure.timeout_s,
            torchrun=measure.torchrun,
        )
