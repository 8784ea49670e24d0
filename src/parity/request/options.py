"""The option table: every option parity takes, declared once with its reader, its range,
its help and the commands that take it.

One ``declare(...)`` per option. The command line builds each command's options from
the table (``parity.cli.common.table_options``), plan files map their keys onto it
(``plan=``), Python keyword arguments are its keys, and a stored ``request.json`` is read
back through it: each option names its place in the request (``place=``) and an inverse
reader (``back=``), so a stored request gives its options back, ``diff``'s options replace
a stored verdict's inputs and ``Given.has`` says what was given, without a second list.
Values are read once, by ``Given.read``: each by its option's reader
(``parity.request.readers``), which checks type, finiteness and range and names the option
as the surface spells it. What holds across options (a workload or a script, the device
known, one of ``--batch-size`` and ``--batch-sizes``) is the request builder's
(``parity.request``). Nothing here imports torch or numpy.

Adding an option: one ``declare`` here (name, reader, help, commands, plan key, place),
then read it in the request builder of each command that takes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from parity.cluster.address import cluster_address, parse_place
from parity.errors import OptionError
from parity.request.readers import (
    Reader,
    comma_texts,
    cost,
    cost_knobs,
    counts,
    experiment,
    fraction,
    note,
    notes,
    number,
    price_table,
    production,
    slo,
    some,
    text,
    texts,
    tracking_uri,
    whole,
)
from parity.request.readers import (
    side as side,
)
from parity.request.values import (
    DAY_S,
    MAX_BATCH,
    allowed_differences,
    check_path,
    checked_pins,
    flag,
    parse_batch_sizes,
    parse_duration,
    pins,
    script_argv,
    show,
)
from parity.safety.urls import checked

if TYPE_CHECKING:
    pass

T = TypeVar("T")
H = TypeVar("H")
T_co = TypeVar("T_co", covariant=True)
#: where a value comes from: the command line and keyword arguments name an option by its
#: flag, a plan file by its key path
Surface = Literal["cli", "kwargs", "plan", "request"]

COMPARE = ("compare",)
RUN = ("run", "scan")
CHECKS = ("rollback", "recovery", "soak")
#: commands that run a workload (the workload's knobs)
WORKLOAD_COMMANDS = (*COMPARE, *RUN, "scale", *CHECKS)
RUNNING = WORKLOAD_COMMANDS
TORCHRUN = (*COMPARE, *RUN)
MULTINODE = (*TORCHRUN, "scale")
JUDGING = (*COMPARE, "diff")
#: commands whose sides run on a Ray cluster's nodes with ``--cluster`` (recovery's kill
#: on the checkpoint event is sent by this machine: not yet)
PLACED = (*COMPARE, *RUN, "rollback", "soak", "scale")


@dataclass(frozen=True, slots=True)
class Option(Generic[T_co]):
    """One option: its keyword (``batch_size``), its flag (``--batch-size``), the reader
    that checks a value of it, its help, and the commands that take it."""

    key: str
    flag: str
    read: Callable[[str, Any], T_co]
    help: str
    commands: tuple[str, ...]
    metavar: str = ""
    #: what the command line hands over (Typer converts to it; None: no command-line form)
    cli: Any = str
    #: its key path in a plan file (``measure.repeats``), where a plan sets it
    plan: str | None = None
    #: the flag that turns it off (``--no-compliance``)
    negative: str | None = None
    #: a plan's value and a given one are merged name by name (mappings)
    merge: bool = False
    #: its place in the request, a dotted path (``judge.min_cosine``): a stored request is
    #: read back through it, and ``diff``'s options replace a stored verdict's inputs there
    place: str | None = None
    #: the inverse reader: the option's value from the value at its place (None: not given)
    back: Callable[[Any], object] = lambda value: value
    #: the flag beside its place that says it was given (``measure.budget_given``): a stored
    #: request gives it where that is set or its value is not the default
    given_by: str | None = None

    @property
    def rare(self) -> bool:
        """Left out of ``--help`` so that it fits a screen; ``docs/cli.md`` has it."""
        return self.key in RARE

    def name(self, surface: Surface) -> str:
        """The option as ``surface`` spells it, for messages: a plan's key path, else its
        flag (its key path where it has no command-line form)."""
        if self.plan and (surface == "plan" or self.cli is None):
            return self.plan
        return self.flag

    def stored(self, request: object) -> object:
        """This option's value as ``request`` holds it (None: not given there)."""
        if self.place is None:
            return None
        *parents, last = self.place.split(".")
        holder = at(request, ".".join(parents))
        if holder is None:
            return None
        value = getattr(holder, last)
        if self.given_by is not None and not at(request, self.given_by):
            default = next(f for f in fields(holder) if f.name == last)
            if value == default.default:  # the default, not given (an edited one is checked)
                return None
        return None if value is None else self.back(value)


def at(holder: object, place: str) -> Any:
    """The value at a dotted path in a request (None where a part is absent)."""
    for name in place.split(".") if place else ():
        if holder is None:
            return None
        holder = getattr(holder, name)
    return holder


TABLE: dict[str, Option[Any]] = {}
#: options few comparisons need (a cluster, torchrun, the judge's extra inputs, MLflow):
#: hidden from ``--help``, still taken, and listed in ``docs/cli.md``
RARE = frozenset(
    {
        "seed", "hf_config", "task", "data", "generate_loop", "cluster", "place",
        "timeout_s", "nproc", "nnodes", "rdzv_endpoint", "batch_sizes", "allow_diff",
        "target_loss", "pins", "checks", "production", "slo",
        "tuning_intended", "mlflow", "mlflow_experiment", "wait", "node_retries",
    }
)  # fmt: skip


def declare(
    key: str, flag: str, read: Reader[T], help: str, commands: tuple[str, ...], **more: Any
) -> Option[T]:
    option: Option[T] = Option(key, flag, read, help, commands, **more)
    assert key not in TABLE, f"option {key} declared twice"
    TABLE[key] = option
    return option


# -- the table -------------------------------------------------------------------------------

W = "workload"
WORKLOAD = declare(
    "workload", "workload", text,
    "built-in name, hf:ARCH or path/to/file.py:factory (default: gpt-train)",
    WORKLOAD_COMMANDS, plan="workload.name", place="workload.name",
)  # fmt: skip
SCRIPT = declare(
    "script",
    "--",
    lambda n, v: script_argv(v),
    "a script's command",
    (*COMPARE, "run"),
    cli=None,
    place="script",
    back=some,
)
SIZE = declare(
    "size", "--size", text, "tiny | small | base (default: tiny)", WORKLOAD_COMMANDS,
    metavar="NAME", plan="workload.size", place="workload.size",
)  # fmt: skip
BATCH_SIZE = declare(
    "batch_size", "--batch-size", whole(high=MAX_BATCH), "override the workload's batch size",
    WORKLOAD_COMMANDS, metavar="N", cli=int, plan="workload.batch_size",
    place="workload.batch_size",
)  # fmt: skip
SEQ_LEN = declare(
    "seq_len", "--seq-len", whole(high=2**20), "override the workload's sequence length",
    WORKLOAD_COMMANDS, metavar="N", cli=int, plan="workload.seq_len", place="workload.seq_len",
)  # fmt: skip
STEPS = declare(
    "steps", "--steps", whole(high=10**7), "override the workload's step count",
    WORKLOAD_COMMANDS, metavar="N", cli=int, plan="workload.steps", place="workload.steps",
)  # fmt: skip
SEED = declare(
    "seed", "--seed", whole(low=0, high=2**63 - 1), "seed of weights and data (default: 0)",
    WORKLOAD_COMMANDS, metavar="N", cli=int, plan="workload.seed", place="workload.seed",
)  # fmt: skip
HF_CONFIG = declare(
    "hf_config", "--hf-config", texts,
    "KEY=VALUE, repeatable: a transformers config setting of an hf: workload (another "
    "workload: one of its config keys); enters the fingerprint",
    WORKLOAD_COMMANDS, metavar="KEY=VALUE", cli=list[str],
    place="workload.overrides", back=lambda kv: [f"{k}={v}" for k, v in kv],
)  # fmt: skip
TASK = declare(
    "task", "--task", text,
    "what an hf:PATH checkpoint does: train | generate | infer | embed | classify (default: "
    "from its config's architectures)",
    WORKLOAD_COMMANDS, metavar="TASK", plan="workload.task", place="workload.task",
)  # fmt: skip
DATA = declare(
    "data", "--data", text,
    "a text, JSONL, CSV or Parquet file (or a datasets directory) whose tokens become the "
    "frozen data (default: the corpus shipped with parity)",
    WORKLOAD_COMMANDS, metavar="FILE[:FIELD]", plan="workload.data", place="workload.data",
)  # fmt: skip
GENERATE_LOOP = declare(
    "generate_loop", "--generate-loop", text,
    "what a generation step times: parity | hf (parity: its own decoding loop, the default; "
    "hf: the transformers model's own generate()); enters the fingerprint",
    WORKLOAD_COMMANDS, metavar="LOOP", plan="workload.generate_loop",
    place="workload.generate_loop",
)  # fmt: skip

BASELINE = declare(
    "baseline", "--baseline", side, "side spec, e.g. cpu or cuda:0+bf16 (default: cpu)",
    (*COMPARE, "rollback"), metavar="SIDE", plan="baseline.side", place="baseline",
)  # fmt: skip
TARGET = declare(
    "target", "--target", side,
    "side spec, e.g. neuron+bf16 (default: the accelerator PyTorch reports, else cpu+bf16)",
    (*COMPARE, "rollback"), metavar="SIDE", plan="target.side", place="target",
)  # fmt: skip
DEVICE = declare(
    "device", "--device", side, "side spec, e.g. cpu+bf16 or cuda:1",
    (*RUN, "scale", "recovery", "soak"), metavar="SIDE",
)  # fmt: skip
OUT = declare(
    "out", "--out", lambda n, v: checked(check_path(n, v), n),
    "output directory, new or empty, or a URL such as s3://BUCKET/PREFIX (default: "
    "parity-runs/STAMP-NAME)",
    RUNNING, metavar="DIR|URL", place="out",
)  # fmt: skip
CLUSTER = declare(
    "cluster", "--cluster", lambda n, v: cluster_address(text(n, v)),
    "run each side on a node of this Ray cluster: ray://HOST:PORT, or auto for $RAY_ADDRESS "
    "(needs parity[cluster])",
    PLACED, metavar="ADDRESS", place="cluster.address",
)  # fmt: skip
PLACE = declare(
    "place", "--place", lambda n, v: parse_place(v if isinstance(v, Mapping) else texts(n, v)),
    "the Ray resource a side's node must have, e.g. target=neuron_cores:2, scale=GPU:4 "
    "(repeatable; SIDE is baseline or target, or the command: run, scan, soak, scale; "
    "default: GPU for cuda, neuron_cores for neuron, CPU for cpu, times the processes)",
    PLACED, metavar="SIDE=RESOURCE[:AMOUNT]", cli=list[str], plan="place",
    place="cluster.place", back=lambda p: {k: str(v) for k, v in p.items()},
)  # fmt: skip
WAIT = declare(
    "wait", "--wait", lambda n, v: parse_duration(text(n, v) if not isinstance(v, (int, float))
                                                  else str(v), n),
    "with --cluster: how long a side waits for a node with its resource (busy, or a node "
    "group scaling up from zero) before the comparison ends as a capacity failure, exit "
    "code 4: e.g. 90s, 30m (default: 30m)",
    PLACED, metavar="DURATION", place="cluster.wait_s",
)  # fmt: skip
NODE_RETRIES = declare(
    "node_retries", "--node-retries", whole(low=0, high=100),
    "with --cluster: how many times a job whose node is lost runs again on another node "
    "with its resource (default: 1)",
    PLACED, metavar="N", cli=int, place="cluster.node_retries",
)  # fmt: skip
TIMEOUT = declare(
    "timeout_s", "--timeout", number(low=1, high=30 * DAY_S),
    "seconds per process before it is stopped and recorded as failed (default: three times "
    "the longest process the estimate foresees)",
    RUNNING, metavar="SECONDS", cli=float, plan="measure.timeout_s",
    place="measure.timeout_s", given_by="measure.timeout_given",
)  # fmt: skip
NPROC = declare(
    "nproc", "--nproc", whole(high=4096),
    "run each side as a torchrun job of N processes (nproc=N)",
    TORCHRUN, metavar="N", cli=int,
)  # fmt: skip
NNODES = declare(
    "nnodes", "--nnodes", whole(high=4096), "torchrun --nnodes (default: 1)",
    MULTINODE, metavar="N", cli=int, place="measure.torchrun.nnodes",
)  # fmt: skip
RDZV = declare(
    "rdzv_endpoint", "--rdzv-endpoint", text, "torchrun --rdzv-endpoint HOST:PORT",
    MULTINODE, metavar="HOST:PORT", place="measure.torchrun.rdzv_endpoint",
)  # fmt: skip

BATCH_SIZES = declare(
    "batch_sizes", "--batch-sizes", lambda n, v: parse_batch_sizes(v),
    "inference and generation: one comparison per batch size, e.g. 1,8,32, and the "
    "throughput-latency curve",
    COMPARE, metavar="N,N,...", place="batch_sizes", back=some,
)  # fmt: skip
REPEATS = declare(
    "repeats", "--repeats", whole(high=1000),
    "fresh processes per side (default: adaptive, see --precision, --budget)",
    COMPARE, metavar="N", cli=int, plan="measure.repeats", place="measure.repeats",
)  # fmt: skip
PRECISION = declare(
    "precision", "--precision", number(low=0, high=0.999, open_low=True),
    "stop when the speed ratio's 95% interval is within this fraction (default: 0.02)",
    COMPARE, metavar="FRACTION", cli=float, plan="measure.precision", place="measure.precision",
)  # fmt: skip
BUDGET = declare(
    "budget_s", "--budget", number(low=0, high=30 * DAY_S, open_low=True),
    "seconds for measuring after set-up: the fp64 reference, the rounds and the compliance "
    "runs; a round that would not fit is not started, and at most 30 rounds run, or one "
    "a second of a larger budget, and up to 4 times as many while the interval is wider "
    "than ±5% (default: 30)",
    COMPARE, metavar="SECONDS", cli=float, plan="measure.budget_s",
    place="measure.budget_s", given_by="measure.budget_given",
)  # fmt: skip
COMPLIANCE = declare(
    "compliance", "--compliance", flag,
    "run the target's re-seeded and identical-input checks (default: on)",
    COMPARE, cli=bool, negative="--no-compliance", plan="measure.compliance",
    place="measure.compliance",
)  # fmt: skip

ALLOW_DIFF = declare(
    "allow_diff", "--allow-diff", lambda n, v: allowed_differences(v),
    'FIELD="reason", repeatable: accept a differing fingerprint field',
    JUDGING, metavar="FIELD=REASON", cli=list[str], place="judge.allow",
)  # fmt: skip
TARGET_LOSS = declare(
    "target_loss", "--target-loss", number(low=None, high=1e30),
    "training: report steps and time to this loss",
    JUDGING, metavar="LOSS", cli=float, plan="quality.target_loss", place="judge.target_loss",
)  # fmt: skip
MIN_COSINE = declare(
    "min_cosine", "--min-cosine", fraction,
    "embeddings: the smallest per-row cosine similarity with the baseline (default: 0.99)",
    COMPARE, plan="quality.min_cosine", cli=None, place="judge.min_cosine",
)  # fmt: skip
MIN_TOP1 = declare(
    "min_top1", "--min-top1", fraction,
    "logits: the smallest top-1 agreement with the baseline (default: 0.99)",
    COMPARE, plan="quality.min_top1", cli=None, place="judge.min_top1",
)  # fmt: skip
PRICES = declare(
    "prices", "--price", price_table,
    "SIDE=DOLLARS_PER_HOUR[:ACCELERATORS], repeatable, e.g. target=21.50:16 (default: the "
    "price in devices/specs.toml of the device a bundle recorded)",
    JUDGING, metavar="SIDE=USD[:N]", cli=list[str], merge=True, place="judge.cost.prices",
)  # fmt: skip
COST = declare(
    "cost", "cost", cost, "cost settings", COMPARE, cli=None, place="judge.cost", back=cost_knobs
)
OPERATIONAL = declare(
    "operational",
    "operational",
    notes,
    "operational answers",
    COMPARE,
    cli=None,
    place="judge.operational",
)
PINS = declare(
    "pins", "--pin", lambda n, v: checked_pins(pins(v)),
    "a package's expected version as pip writes it, repeatable, e.g. torch==2.13.* or "
    "'numpy>=1.24,<3': drift on either side is reported in the verdict",
    JUDGING, metavar="NAME==VERSION", cli=list[str], merge=True, place="judge.pins",
)  # fmt: skip
CHECKS_DIRS = declare(
    "checks", "--checks", comma_texts,
    "check directories (parity check --out), comma-separated: each passing check on the "
    "same sides ticks the verdict's not-yet-proven list",
    JUDGING, metavar="DIR,...", place="checks", back=some,
)  # fmt: skip
PRODUCTION = declare(
    "production", "--production", production,
    "the production shape, repeatable: parameters=1.3B, seq_len, batch_size, precision, "
    "optimizer, max_new_tokens, data_pipeline; the verdict compares the workload with it "
    "and projects memory at that size",
    JUDGING, metavar="KEY=VALUE", cli=list[str], place="judge.production",
)  # fmt: skip
SLO = declare(
    "slo", "--slo", slo,
    "latency limits gating the target, e.g. ttft_p99=200ms,tpot_p50=30ms,e2e_p99=2s (ttft, "
    "tpot, itl, e2e, latency; p50, p90, p99)",
    JUDGING, metavar="LIMITS", cli=list[str], place="judge.slo", back=some,
)  # fmt: skip
TUNING_INTENDED = declare(
    "tuning_intended", "--tuning-intended", note,
    "the sides are tuned differently on purpose: the speed figures lose the tuning-asymmetry "
    "label (the asymmetry is still listed)",
    JUDGING, metavar="REASON", plan="tuning.intended", place="judge.tuning_intended",
)  # fmt: skip
REPORT = declare(
    "report", "--report", flag,
    "write OUT/report.html once the verdict is on disk (default: on; --no-report saves "
    "drawing its plots, seconds of CPU; parity report OUT writes it later)",
    COMPARE, cli=bool, negative="--no-report", place="report",
)  # fmt: skip
MLFLOW = declare(
    "mlflow", "--mlflow", tracking_uri,
    "log the comparison as an MLflow run, at URI (http(s)://HOST:PORT, sqlite:///FILE, "
    "file:DIR) or, given alone, MLflow's default (MLFLOW_TRACKING_URI, else ./mlruns); "
    "needs parity[mlflow]",
    COMPARE, metavar="[URI]", plan="mlflow.tracking_uri",
    place="mlflow", back=lambda m: m.tracking_uri or "",
)  # fmt: skip
MLFLOW_EXPERIMENT = declare(
    "mlflow_experiment", "--mlflow-experiment", experiment,
    "the MLflow experiment (default: parity)",
    COMPARE, metavar="NAME", plan="mlflow.experiment", place="mlflow.experiment",
)  # fmt: skip

SCALING = declare(
    "scaling", "--scaling", counts, "process counts, comma-separated, e.g. 1,2,4 (default: 1,2)",
    ("scale",), metavar="N,N,...",
)  # fmt: skip
K = declare(
    "k", "--k", whole(high=10**7), "steps before the checkpoint (default: half the steps)",
    ("rollback", "recovery"), metavar="K", cli=int,
)  # fmt: skip
M = declare(
    "m", "--m", whole(high=10**7), "steps after the checkpoint (default: the rest)",
    ("rollback", "recovery"), metavar="M", cli=int,
)  # fmt: skip
DURATION = declare(
    "duration", "--duration", lambda n, v: parse_duration(text(n, v)),
    "how long to run: 30s, 10m, 1h, 1h30m (default: 10m)",
    ("soak",), metavar="DURATION",
)  # fmt: skip
MAX_DRIFT = declare(
    "max_drift", "--max-drift", number(low=0, high=1e6, open_low=True),
    "latency drift bound, relative per hour (default: 0.1 = 10%/h)",
    ("soak",), metavar="FRACTION", cli=float,
)  # fmt: skip
MAX_HOST_GROWTH = declare(
    "max_host_growth", "--max-host-growth", number(low=0, high=1e9, open_low=True),
    "host RSS growth bound, MiB per minute (default: 1)",
    ("soak",), metavar="MIB", cli=float,
)  # fmt: skip
MAX_DEVICE_GROWTH = declare(
    "max_device_growth", "--max-device-growth", number(low=0, high=1e9, open_low=True),
    "device allocated growth bound, MiB per minute (default: 1)",
    ("soak",), metavar="MIB", cli=float,
)  # fmt: skip
WARMUP = declare(
    "warmup", "--warmup", number(low=0, high=0.9),
    "fraction of the run left out of the slopes (default: 0.1)",
    ("soak",), metavar="FRACTION", cli=float,
)  # fmt: skip


def side_flags(command: str) -> tuple[str, ...]:
    """The flags of ``command`` (``compare``, ``check soak``) whose value is a side spec."""
    name = command.split()[-1] if command else ""
    return tuple(o.flag for o in TABLE.values() if o.read is side and name in o.commands)


def options_of(command: str) -> list[Option[Any]]:
    """The options ``command`` takes, in declaration order."""
    return [o for o in TABLE.values() if command in o.commands]


# -- the options given ----------------------------------------------------------------------


@dataclass(frozen=True)
class Given:
    """The options given to one command, each read by its option (not given: absent)."""

    command: str
    values: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def read(cls, command: str, raw: Mapping[str, object], surface: Surface) -> Given:
        """Read every value of ``raw`` (key -> value; None: not given) by its option."""
        takes = {o.key: o for o in options_of(command)}
        values: dict[str, object] = {}
        for key, value in raw.items():
            option = takes.get(key)
            if option is None:
                known = ", ".join(sorted(takes))
                raise OptionError(f"unknown argument {show(key)}: use one of {known}")
            if value is not None:
                values[key] = option.read(option.name(surface), value)
        return cls(command, values)

    def get(self, option: Option[T]) -> T | None:
        return cast("T | None", self.values.get(option.key))

    def value(self, option: Option[T], default: T) -> T:
        got = self.get(option)
        return default if got is None else got

    def has(self, option: Option[Any]) -> bool:
        return option.key in self.values

    @classmethod
    def stored(cls, command: str, request: object) -> Given:
        """The options ``request`` holds, each read back by its option at its place (a
        stored request checked as when it was given)."""
        found = {o.key: o.stored(request) for o in options_of(command)}
        return cls.read(command, {k: v for k, v in found.items() if v is not None}, "request")

    def placed(self, into: H, under: str) -> H:
        """``into`` (the part of a request at ``under``, e.g. ``judge``) with every option
        given whose place is in it put there: a mapping option merged name by name, a
        part before the values inside it."""
        chosen = [
            TABLE[key]
            for key, value in self.values.items()
            if value is not None and (TABLE[key].place or "").startswith(under + ".")
        ]
        for option in sorted(chosen, key=lambda o: (o.place or "").count(".")):
            path = (option.place or "").split(".")[1:]
            value = self.values[option.key]
            if option.merge:
                old = at(into, ".".join(path))
                value = {**old, **cast("Mapping[str, object]", value)}
            into = _put(into, path, value)
        return into

    def merged(self, over: Given) -> Given:
        """These options with every option ``over`` gives replacing them (mappings merged
        name by name)."""
        values = dict(self.values)
        for key, value in over.values.items():
            old = values.get(key)
            if TABLE[key].merge and isinstance(old, Mapping) and isinstance(value, Mapping):
                value = {**old, **value}
            values[key] = value
        return Given(self.command, values)


def _put(holder: H, path: list[str], value: object) -> H:
    """A copy of the frozen dataclass ``holder`` with ``value`` at ``path``."""
    name, *rest = path
    inner = value if not rest else _put(getattr(holder, name), rest, value)
    return cast("H", replace(cast("Any", holder), **{name: inner}))
