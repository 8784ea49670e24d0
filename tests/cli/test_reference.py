"""docs/cli.md is what ``python -m parity.cli.reference`` writes today, and it names every
option of every command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer

from parity.cli.app import app
from parity.cli.reference import render
from parity.request.options import TABLE

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_docs_cli_md_is_current() -> None:
    assert PAGE.read_text() == render(), (
        "docs/cli.md is stale: run .venv/bin/python -m parity.cli.reference > docs/cli.md"
    )


def test_every_flag_of_every_command_is_on_the_page() -> None:
    page = render()
    group = typer.main.get_command(app)
    missing = []
    stack = [("parity", group)]
    while stack:
        path, command = stack.pop()
        for name, sub in getattr(command, "commands", {}).items():
            if not getattr(sub, "hidden", False):  # a submitted job's, not on the page
                stack.append((f"{path} {name}", sub))
        if hasattr(command, "commands"):
            continue
        section = page.split(f"## `{path}`\n", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            for flag in [*param.opts, *param.secondary_opts]:
                if (
                    flag.startswith("-")
                    and flag not in ("-h", "--help")
                    and f"`{flag}`" not in section
                ):
                    missing.append(f"{path} {flag}")
    assert missing == []


def test_every_option_of_the_table_is_on_the_page() -> None:
    page = render()
    missing = [
        o.key
        for o in TABLE.values()
        if (o.cli is not None and f"`{o.flag}`" not in page and o.flag != "workload")
        or (o.cli is None and o.plan and f"`{o.plan}`" not in page)
    ]
    assert missing == []


@pytest.mark.slow  # starts a process
def test_the_page_does_not_depend_on_the_terminal() -> None:
    code = "from parity.cli.reference import render; import sys; sys.stdout.write(render())"
    env = {"COLUMNS": "40", "TERM": "dumb", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout == render()
