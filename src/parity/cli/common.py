"""What every command shares: its options from the option table (``table_options``), the
options given, consoles, and the mapping from errors to exit codes and one-line messages.

The table's options default to None ("not given"): their readers, ranges and defaults
live in ``parity.request.options`` and ``parity.request``; a parameter is named after the
option's key, so ``given_options`` reads them back without a list.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from parity.errors import EXIT_CAPACITY, CapacityError, ParityError, UsageError, denied, one_line
from parity.request import options as o
from parity.request.options import TABLE, Option, options_of

if TYPE_CHECKING:
    from rich.console import Console

    from parity.request.options import Given

# -- what several commands declare themselves (the rest comes from the option table) ----

WorkloadArg = Annotated[
    str | None,
    typer.Argument(metavar="WORKLOAD", help=o.WORKLOAD.help, show_default=False),
]
RequiredWorkload = Annotated[
    str, typer.Argument(metavar="WORKLOAD", help=o.WORKLOAD.help.split(" (default")[0])
]
#: a side the command needs (run, scan, scale)
Device = Annotated[str, typer.Option("--device", metavar="SIDE", help=o.DEVICE.help)]

# -- output -----------------------------------------------------------------------------------

AsJson = Annotated[bool, typer.Option("--json", help="print JSON on stdout instead of tables")]
Wide = Annotated[
    bool, typer.Option("--wide", help="print tables at full width (no wrapping or shortening)")
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="print every section in full (default: the verdict on one screen)"
    ),
]
Store = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="FILE|URL",
        help="history index: an SQLite file or postgresql://USER@HOST/DB (default: "
        "$PARITY_STORE, else ~/.local/share/parity/index.sqlite)",
    ),
]
Dashboard = Annotated[
    str | None,
    typer.Option(
        "--dashboard",
        metavar="URL",
        help="the cluster's Ray dashboard, where jobs are submitted (default: "
        "$RAY_API_SERVER_ADDRESS, else port 8265 of the cluster head)",
    ),
]


F = TypeVar("F", bound=Callable[..., None])
#: a command's own options listed after the table's: what to do with the result
LAST = ("plan", "resume", "store", "strict", "as_json", "wide")


def use_store(store: str | None) -> None:
    """``--store`` of a command that indexes what it makes (compare, run): checked now,
    before anything runs (a password masked in any error), and the index this process
    writes to (it takes precedence over ``$PARITY_STORE``, as for ``ls``)."""
    if store is None:
        return
    import os

    from parity.store.engine import locate

    locate(store)
    os.environ["PARITY_STORE"] = store


def _annotation(option: Option[Any]) -> Any:
    """The Typer parameter of an option of the table (None: not given)."""
    decls = [f"{option.flag}/{option.negative}"] if option.negative else [option.flag]
    info = typer.Option(
        *decls,
        metavar=option.metavar or None,
        help=option.help,
        show_default=False,
        hidden=option.rare,
    )
    return Annotated[option.cli | None, info]


def table_options(command: str) -> Callable[[F], F]:
    """Add the options the table declares for ``command`` to its signature, which is
    what Typer reads: the command takes them as ``**options`` and reads them back
    through ``given_options``. A parameter the command declares itself (a positional
    workload, a required ``--device``, its own help) wins over the table's of the same
    name; the table's come before the command's output options (``LAST``) in ``--help``."""
    keyword = inspect.Parameter.KEYWORD_ONLY

    def add(function: F) -> F:
        signature = inspect.signature(function, eval_str=True)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        names = {p.name for p in own}
        extra = [
            inspect.Parameter(o.key, keyword, annotation=_annotation(o), default=None)
            for o in options_of(command)
            if o.cli is not None and o.key not in names
        ]
        head = [p for p in own if p.name not in LAST]
        tail = [p.replace(kind=keyword) for p in own if p.name in LAST]
        function.__signature__ = signature.replace(parameters=[*head, *extra, *tail])  # type: ignore[attr-defined]
        return function

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


def given_options(ctx: typer.Context, command: str) -> Given:
    """The options of the table given to ``command`` (parameters named by their keys)
    and the script after ``--``, each read once by its option."""
    from parity.request.options import Given

    values = {k: v for k, v in ctx.params.items() if k in TABLE and given(ctx, k)}
    script = script_of(ctx)
    if script:
        values["script"] = script
    return Given.read(command, values, "cli")


def _console(*, stderr: bool) -> Console:
    """A Rich console whose ``print`` makes every plain string printable first (a bundle's
    side, reason or path can carry terminal escapes: ``parity.printable``); the view's
    ``Text`` lines are printable already."""

    from rich.console import Console

    from parity.printable import printable

    class Printable(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            super().print(*(printable(o) if isinstance(o, str) else o for o in objects), **kwargs)

    return Printable(stderr=stderr, highlight=False)


def stdout() -> Console:
    """A console on stdout (the renderers fit its width, or ignore it with ``--wide``)."""
    return _console(stderr=False)


def stderr() -> Console:
    return _console(stderr=True)


def write_out(text: str) -> None:
    """Text for stdout as it is (JSON, Markdown), printable: never wrapped, one final
    newline (JSON escapes control characters itself; this catches a path or a name)."""
    from parity.printable import printable

    text = printable(text)
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
    if isinstance(exc, PermissionError):  # the user's file or directory, not a bug
        exc = denied(exc)
    if isinstance(exc, UsageError):
        return 2, f"parity: error: {one_line(exc)}"
    if isinstance(exc, CapacityError):
        return EXIT_CAPACITY, f"parity: no capacity: {one_line(exc)}"
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
