"""The ``parity`` command line: ``main`` refuses a bad side spec before anything heavy is
imported, then hands the arguments to the Typer app (``parity.cli.app``).

Typer, Click and Rich cost a few hundred milliseconds to import; a typo in ``--target``
should not. ``main`` reads the side-spec options of the command named (the option table,
``parity.request.options``, says which options of which commands are side specs) and parses
them with ``parity.model.spec``, which keeps each typed side: the app's option table reads
the same one, parsed once. Anything else, including every other check of those options,
is the app's. The first error is the same either way: one line, exit code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn


def early_refusal(argv: Sequence[str]) -> str | None:
    """The one-line error for a bad side spec in ``argv`` (None: none found, or help
    asked for). Only the sides are read here: the full parse follows in the app."""
    from parity.errors import UsageError, one_line
    from parity.request.options import side_flags

    head = list(argv[: argv.index("--")] if "--" in argv else argv)
    if any(a in ("-h", "--help", "--version") for a in head):
        return None
    words = [a for a in head if not a.startswith("-")]
    command = " ".join(words[:2]) if words[:1] == ["check"] else " ".join(words[:1])
    flags = side_flags(command)
    if not flags:
        return None
    from parity.request.values import read_side

    for i, arg in enumerate(head):
        name, eq, value = arg.partition("=")
        if name not in flags:
            continue
        if not eq:
            if i + 1 >= len(head):
                return None  # a missing value is the parser's to name
            value = head[i + 1]
        try:
            read_side(name, value)
        except UsageError as exc:
            return f"parity: error: {one_line(exc)}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    refused = early_refusal(args)
    if refused is not None:
        sys.stderr.write(refused + "\n")
        return 2
    from parity.cli.app import run_app

    return run_app(args)


def entry() -> NoReturn:
    """The ``parity`` command and ``python -m parity``: ``main``, then out without the
    interpreter's teardown of torch (``parity.exiting``)."""
    from parity.exiting import leave

    leave(main())


__all__ = ["entry", "main"]
