"""``docs/cli.md``: every command and option, written from the command line itself.

    python -m parity.cli.reference > docs/cli.md

Each command's options are the ones Typer parses (the option table's, ``parity.request.options``,
and the command's own), in ``--help`` order, with the plan-file key of each table option;
then the settings that only a plan file or Python takes. Nothing here depends on the
terminal, so the page is the same on every machine and ``tests/cli/test_reference.py``
fails when it is stale.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from parity.request.options import TABLE

HEADER = """\
# Command-line reference

Generated from the option table (`src/parity/request/options.py`) and the commands
(`src/parity/cli/`) by `python -m parity.cli.reference > docs/cli.md`; a test fails when
this page is stale. Defaults are in each option's text. A plan file sets the options that
have a plan key ([plans.md](plans.md)); Python takes every option as a keyword argument
named after its key (`--batch-size` is `batch_size`).
"""


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _names(param: Any) -> str:
    if param.param_type_name == "argument":
        return f"`{param.metavar or param.name.upper()}`"
    flags = [*param.opts, *param.secondary_opts]
    return ", ".join(f"`{f}`" for f in flags)


def _value(param: Any) -> str:
    if param.param_type_name == "argument" or getattr(param, "is_flag", False):
        return ""
    return f"`{_cell(param.metavar)}`" if param.metavar else ""


def _plan_key(param: Any) -> str:
    option = TABLE.get(param.name or "")
    return f"`{option.plan}`" if option is not None and option.plan else ""


def _command(path: str, command: Any) -> list[str]:
    doc = (command.help or command.short_help or "").strip()
    first = doc.split("\n\n")[0]
    lines = [f"## `{path}`", "", " ".join(first.split()), ""]
    params = [p for p in command.params if p.name != "help"]
    if params:
        lines += ["| option | value | what it does | plan key |", "|---|---|---|---|"]
        for p in params:
            row = (_names(p), _value(p), _cell(getattr(p, "help", "") or ""), _plan_key(p))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return lines


def _commands(prefix: str, group: Any) -> list[str]:
    lines: list[str] = []
    for name, command in group.commands.items():
        if getattr(command, "hidden", False):  # what a submitted job runs, not a user
            continue
        path = f"{prefix} {name}"
        if hasattr(command, "commands"):
            lines += _commands(path, command)
        else:
            lines += _command(path, command)
    return lines


def _plan_only() -> list[str]:
    rows = [o for o in TABLE.values() if o.cli is None and o.plan]
    lines = [
        "## Settings without a flag",
        "",
        "Set in a plan file or as a keyword argument from Python.",
        "",
        "| plan key | keyword | what it does | commands |",
        "|---|---|---|---|",
    ]
    for o in rows:
        commands = ", ".join(o.commands)
        lines.append(f"| `{o.plan}` | `{o.key}` | {_cell(o.help)} | {commands} |")
    return [*lines, ""]


def render() -> str:
    """The page, as ``docs/cli.md`` holds it."""
    from parity.cli.app import app

    group: Any = typer.main.get_command(app)
    shown = [n for n, command in group.commands.items() if not getattr(command, "hidden", False)]
    lines = [HEADER, "Commands: " + ", ".join(f"`{n}`" for n in shown) + ".", ""]
    lines += _commands("parity", group)
    lines += _plan_only()
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
