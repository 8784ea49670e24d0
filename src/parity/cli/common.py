"""What every command shares: option types (declared once), the options given, consoles,
and the mapping from errors to exit codes and one-line messages.

Options that feed a request default to None ("not given"): the defaults, the ranges and
every check live in ``parity.request``, and a parameter is named after the
``CompareOptions`` field it fills, so ``given_options`` passes them on without a list.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer

from parity.errors import ParityError, UsageError, one_line
from parity.spec import GENERATE_LOOPS, TASKS

if TYPE_CHECKING:
    from rich.console import Console

    from parity.request import CompareOptions

# -- the workload -----------------------------------------------------------------------------

WorkloadArg = Annotated[
    str | None,
    typer.Argument(
        metavar="WORKLOAD",
        help="built-in name, hf:ARCH or path/to/file.py:factory (default: gpt-train)",
        show_default=False,
    ),
]
RequiredWorkload = Annotated[
    str,
    typer.Argument(metavar="WORKLOAD", help="built-in name, hf:ARCH or path/to/file.py:factory"),
]
Size = Annotated[
    str | None, typer.Option("--size", metavar="NAME", help="tiny | small | base (default: tiny)")
]
BatchSize = Annotated[
    int | None, typer.Option("--batch-size", metavar="N", help="override the workload's batch size")
]
SeqLen = Annotated[
    int | None,
    typer.Option("--seq-len", metavar="N", help="override the workload's sequence length"),
]
Steps = Annotated[
    int | None, typer.Option("--steps", metavar="N", help="override the workload's step count")
]
Seed = Annotated[
    int | None, typer.Option("--seed", metavar="N", help="seed of weights and data (default: 0)")
]
HfConfig = Annotated[
    list[str] | None,
    typer.Option(
        "--hf-config",
        metavar="KEY=VALUE",
        help="KEY=VALUE, repeatable: a transformers config setting of an hf: workload "
        "(another workload: one of its config keys); enters the fingerprint",
    ),
]

# -- sides and how they run -------------------------------------------------------------------

Baseline = Annotated[
    str | None,
    typer.Option(
        "--baseline", metavar="SIDE", help="side spec, e.g. cpu or cuda:0+bf16 (default: cpu)"
    ),
]
Target = Annotated[
    str | None,
    typer.Option(
        "--target",
        metavar="SIDE",
        help="side spec, e.g. neuron+bf16 (default: the accelerator PyTorch reports, "
        "else cpu+bf16)",
    ),
]
Device = Annotated[
    str, typer.Option("--device", metavar="SIDE", help="side spec, e.g. cpu+bf16 or cuda:1")
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="DIR",
        help="output directory, new or empty (default: parity-runs/STAMP-NAME)",
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="seconds per process before it is stopped and recorded as failed (default: 900)",
    ),
]
Nproc = Annotated[
    int | None,
    typer.Option(
        "--nproc", metavar="N", help="run each side as a torchrun job of N processes (nproc=N)"
    ),
]
Nnodes = Annotated[
    int | None, typer.Option("--nnodes", metavar="N", help="torchrun --nnodes (default: 1)")
]
Rdzv = Annotated[
    str | None,
    typer.Option("--rdzv-endpoint", metavar="HOST:PORT", help="torchrun --rdzv-endpoint HOST:PORT"),
]

# -- judging ----------------------------------------------------------------------------------

AllowDiff = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-diff",
        metavar="FIELD=REASON",
        help='FIELD="reason", repeatable: accept a differing fingerprint field',
    ),
]
TargetLoss = Annotated[
    float | None,
    typer.Option(
        "--target-loss", metavar="LOSS", help="training: report steps and time to this loss"
    ),
]
Prices = Annotated[
    list[str] | None,
    typer.Option(
        "--price",
        metavar="SIDE=USD[:N]",
        help="SIDE=DOLLARS_PER_HOUR[:ACCELERATORS], repeatable, e.g. target=21.50:16 "
        "(default: the price in devices/specs.toml of the device a bundle recorded)",
    ),
]
Pins = Annotated[
    list[str] | None,
    typer.Option(
        "--pin",
        metavar="NAME==VERSION",
        help="a package's expected version as pip writes it, repeatable, e.g. torch==2.13.* "
        "or 'numpy>=1.24,<3': drift on either side is reported in the verdict",
    ),
]
Checks = Annotated[
    str | None,
    typer.Option(
        "--checks",
        metavar="DIR,...",
        help="check directories (parity check --out), comma-separated: each passing check "
        "on the same sides ticks the verdict's not-yet-proven list",
    ),
]

Production = Annotated[
    list[str] | None,
    typer.Option(
        "--production",
        metavar="KEY=VALUE",
        help="the production shape, repeatable: parameters=1.3B, seq_len, batch_size, "
        "precision, optimizer, max_new_tokens, data_pipeline; the verdict compares the "
        "workload with it and projects memory at that size",
    ),
]
Slo = Annotated[
    list[str] | None,
    typer.Option(
        "--slo",
        metavar="LIMITS",
        help="latency limits gating the target, e.g. ttft_p99=200ms,tpot_p50=30ms,e2e_p99=2s "
        "(ttft, tpot, itl, e2e, latency; p50, p90, p99)",
    ),
]
TuningIntended = Annotated[
    str | None,
    typer.Option(
        "--tuning-intended",
        metavar="REASON",
        help="the sides are tuned differently on purpose: the speed figures lose the "
        "tuning-asymmetry label (the asymmetry is still listed)",
    ),
]

# -- output -----------------------------------------------------------------------------------

AsJson = Annotated[bool, typer.Option("--json", help="print JSON on stdout instead of tables")]
Wide = Annotated[
    bool, typer.Option("--wide", help="print tables at full width (no wrapping or shortening)")
]
Store = Annotated[
    Path | None,
    typer.Option(
        "--store",
        metavar="FILE",
        help="history index (default: $PARITY_STORE, else ~/.local/share/parity/index.sqlite)",
    ),
]


Task = Annotated[
    str | None,
    typer.Option(
        "--task",
        metavar="TASK",
        help=f"what an hf:PATH checkpoint does: {' | '.join(TASKS)} (default: from its "
        "config's architectures)",
    ),
]
Data = Annotated[
    str | None,
    typer.Option(
        "--data",
        metavar="FILE[:FIELD]",
        help="a text, JSONL, CSV or Parquet file (or a datasets directory) whose tokens "
        "become the frozen data (default: the corpus shipped with parity)",
    ),
]

GenerateLoopOption = Annotated[
    str | None,
    typer.Option(
        "--generate-loop",
        metavar="LOOP",
        help=f"what a generation step times: {' | '.join(GENERATE_LOOPS)} (parity: its own "
        "decoding loop, the default; hf: the transformers model's own generate()); enters "
        "the fingerprint",
    ),
]

#: groups of request options that several commands take (each defaults to None)
WORKLOAD: dict[str, object] = {
    "size": Size,
    "batch_size": BatchSize,
    "seq_len": SeqLen,
    "steps": Steps,
    "seed": Seed,
    "hf_config": HfConfig,
    "task": Task,
    "data": Data,
    "generate_loop": GenerateLoopOption,
}
RUNNING: dict[str, object] = {"out": Out, "timeout_s": Timeout}
MULTINODE: dict[str, object] = {"nnodes": Nnodes, "rdzv_endpoint": Rdzv}
TORCHRUN: dict[str, object] = {"nproc": Nproc, **MULTINODE}
JUDGING: dict[str, object] = {
    "allow_diff": AllowDiff,
    "target_loss": TargetLoss,
    "prices": Prices,
    "pins": Pins,
    "checks": Checks,
    "production": Production,
    "slo": Slo,
    "tuning_intended": TuningIntended,
}
F = TypeVar("F", bound=Callable[..., None])
#: a command's own options listed after the groups: what to do with the result
LAST = ("plan", "resume", "strict", "as_json", "wide")


def with_options(*groups: dict[str, object]) -> Callable[[F], F]:
    """Add option groups to a command's signature, which is what Typer reads: the
    command takes them as ``**options`` and reads them back through ``given_options``.
    A parameter the command declares itself wins over a group's of the same name; the
    groups come before the command's own output options (``LAST``) in ``--help``."""
    keyword = inspect.Parameter.KEYWORD_ONLY

    def add(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        names = {p.name for p in own}
        extra = [
            inspect.Parameter(name, keyword, annotation=kind, default=None)
            for group in groups
            for name, kind in group.items()
            if name not in names
        ]
        head = [p for p in own if p.name not in LAST]
        tail = [p.replace(kind=keyword) for p in own if p.name in LAST]
        command.__signature__ = signature.replace(parameters=[*head, *extra, *tail])  # type: ignore[attr-defined]
        return command

    return add


@dataclass(frozen=True)
class Invocation:
    """What ``main`` hands every command besides its options: the script after ``--``."""

    script: tuple[str, ...] = ()


def script_of(ctx: typer.Context) -> tuple[str, ...]:
    obj = ctx.find_root().obj
    return obj.script if isinstance(obj, Invocation) else ()


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was given (an empty repeatable option was not)."""
    return ctx.params.get(name) not in (None, (), [])


def given_options(ctx: typer.Context, **extra: object) -> CompareOptions:
    """The command's parameters that fill ``CompareOptions`` (by name), the script after
    ``--`` and ``extra``, checked for type by ``CompareOptions.from_kwargs``."""
    from dataclasses import fields

    from parity.request import CompareOptions

    names = {f.name for f in fields(CompareOptions)}
    values = {k: v for k, v in ctx.params.items() if k in names and given(ctx, k)}
    script = script_of(ctx)
    if script:
        values["script"] = script
    return CompareOptions.from_kwargs(**values, **extra)


def stdout() -> Console:
    """A console on stdout (the renderers fit its width, or ignore it with ``--wide``)."""
    from rich.console import Console

    return Console(highlight=False)


def stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def write_out(text: str) -> None:
    """Text for stdout as it is (JSON, Markdown): never wrapped, one final newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def note(message: str) -> None:
    """One line on stderr (``parity: ...``), escaped and shortened like every error."""
    sys.stderr.write(f"parity: {one_line(message)}\n")


def fail_usage(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit code 2."""
    raise UsageError(message)


def _parse_errors() -> tuple[type[BaseException], ...]:
    """What the command-line parser raises: Typer's own exception where it vendors Click
    (typer >= 0.20), Click's where Typer uses the Click that is installed (older Typer, as
    a lent GPU machine's image may hold)."""
    found: list[type[BaseException]] = []
    vendored = getattr(typer, "TyperException", None)
    if isinstance(vendored, type) and issubclass(vendored, BaseException):
        found.append(vendored)
    try:
        from click.exceptions import ClickException
    except ImportError:  # pragma: no cover - Typer without Click installed
        pass
    else:
        found.append(ClickException)
    return tuple(found)


def error_line(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one line that an error ends the command with."""
    if isinstance(exc, UsageError):
        return 2, f"parity: error: {one_line(exc)}"
    if isinstance(exc, ParityError):
        return 1, f"parity: {one_line(exc)}"
    if isinstance(exc, _parse_errors()):  # a usage error found while parsing
        ctx = getattr(exc, "ctx", None)
        where = f" (see {ctx.command_path if ctx is not None else 'parity'} --help)"
        code = getattr(exc, "exit_code", 2)
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return (code if code in (1, 2) else 2), f"parity: error: {one_line(message)}{where}"
    if isinstance(exc, KeyboardInterrupt):
        return 130, "parity: interrupted"
    return 1, (
        f"parity: internal error: {type(exc).__name__}: {one_line(exc)} (a bug in parity: "
        "please report it with the command line)"
    )
