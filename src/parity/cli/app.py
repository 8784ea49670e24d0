"""The ``parity`` Typer app: parse, build one request, call the API, render, exit
(``parity.cli.main`` runs it, after refusing a bad side spec without importing it).

One module per command group (``compare``, ``run``, ``inspect``, ``history``, ``check``,
``scale``); ``common`` holds the option types and the error mapping. No command holds
logic: requests are built and validated by ``parity.request``, the work is the API's.

Exit codes: 0 the target passes every gate; 1 it fails a gate, a side failed, or a check
or scan found what it looks for; 2 bad input or usage (one line on stderr naming the
problem and the fix, nothing written); 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from parity.cli import check, compare, history, inspect, jobs, run, scale, serve, sweep
from parity.cli.common import Invocation, error_line
from parity.errors import UsageError
from parity.version import __version__

#: the commands that take a script after ``--``
SCRIPT_COMMANDS = ("compare", "run")


def split_script(args: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """The arguments before ``--`` and the script's command after it."""
    if "--" not in args:
        return args, ()
    cut = args.index("--")
    head, script = args[:cut], tuple(args[cut + 1 :])
    command = next((a for a in head if not a.startswith("-")), None)
    if command not in SCRIPT_COMMANDS:
        raise UsageError(
            "only parity compare and parity run take a script after --: "
            "e.g. parity compare --target cpu+bf16 -- python train.py"
        )
    if not script:
        raise UsageError(
            "nothing after --: give the script's command, e.g. parity compare --target "
            "cpu+bf16 -- python train.py --device {device}"
        )
    return head, script


#: options whose value may be left out: the value they take alone
OPTIONAL_VALUE = {"--mlflow": ""}


def optional_values(args: list[str]) -> list[str]:
    """``--mlflow`` alone (at the end, or before another option) as ``--mlflow=``: Click
    needs a value, and a workload name after it is not a URI (``--mlflow URI`` is one when
    it has a scheme, ``://``, ``file:`` or is ``databricks``)."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg in OPTIONAL_VALUE:
            after = args[i + 1] if i + 1 < len(args) else None
            if after is None or after.startswith("-") or not _looks_like_uri(after):
                out.append(f"{arg}={OPTIONAL_VALUE[arg]}")
                continue
        out.append(arg)
    return out


def _looks_like_uri(text: str) -> bool:
    return "://" in text or text.startswith("file:") or text.split(":")[0] == "databricks"


class ParityGroup(TyperGroup):
    """The top-level command: splits off a script after ``--`` and turns every error
    into its exit code and one line on stderr, however it is invoked (``main``, Typer's
    test runner, ``python -m parity``)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        *,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> int:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            head, script = split_script(argv)
            head = optional_values(head)
            bare = self._bare_group(head)
            if bare is not None:  # the help, then exit code 2, whichever Click is installed
                head = [*head, "--help"]
            returned = super().main(
                head, "parity", standalone_mode=False, obj=Invocation(script), **extra
            )
            code = returned if isinstance(returned, int) else 0
            if bare is not None:
                sys.stderr.write(f"parity: error: {bare} needs a command (listed above)\n")
                code = 2
            if code == 130:
                sys.stderr.write("parity: interrupted\n")
        except (Exception, KeyboardInterrupt) as exc:
            code = _report(exc)
        if standalone_mode:
            sys.exit(code)
        return code

    def _bare_group(self, head: Sequence[str]) -> str | None:
        """``parity`` or ``parity check`` with nothing after it: the command path."""
        if not head:
            return "parity"
        if len(head) == 1 and hasattr(self.commands.get(head[0]), "commands"):
            return f"parity {head[0]}"
        return None


def _report(exc: BaseException) -> int:
    code, line = error_line(exc)
    sys.stderr.write(line + "\n")
    return code


app = typer.Typer(
    cls=ParityGroup,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"max_content_width": 100, "help_option_names": ["-h", "--help"]},
    help="Move a PyTorch workload between accelerators with evidence: "
    "compatibility, numerics, performance and cost, side by side.",
)
app.command(short_help="compare a workload on a baseline and a target")(compare.compare)
run.register(app)
inspect.register(app)
history.register(app)
scale.register(app)
serve.register(app)
app.command(short_help="a matrix of comparisons, summarised")(sweep.sweep)
jobs.register(app)
app.command(hidden=True)(compare.submitted)  # what a submitted job runs
app.add_typer(check.app, name="check", short_help="rollback, recovery and soak checks")


def _version(value: bool) -> None:
    if value:
        print(f"parity {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """parity: does the target run it, give the same results, go faster, cost less?"""


def run_app(argv: Sequence[str]) -> int:
    """Run the app on ``argv``; the exit code."""
    command = typer.main.get_command(app)
    assert isinstance(command, ParityGroup)
    return command.main(argv, "parity", standalone_mode=False)


__all__ = ["app", "run_app"]
