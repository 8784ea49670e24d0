"""Secrets a workload loads into its own environment from a ``.env`` file.

A workload that calls ``dotenv.load_dotenv()`` (or reads ``.env`` itself) has credentials
in its environment that parity's own environment never held, so the redactor of the
parent process, which relays the worker's logs and writes its failure, would not know
them. ``secrets`` reads the ``.env`` files such a call finds, the first one in each given
directory or above it (where the workload's file lies, the script's, the working
directory), and returns the values the redactor's rule for the environment calls
secret: secret-named variables, those named in ``PARITY_REDACT``, passwords and secret
query values of URLs. They are only learned, never written anywhere.

A value a workload makes up at run time (read from a vault, typed in) cannot be known
this way: only its shape (a token format, a ``password=...`` pair) is redacted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

NAME = ".env"
#: a ``.env`` file larger than this is not one (it is not read)
MOST_BYTES = 1 << 20
_LINE = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(?P<value>.*?)\s*$")


def found(start: Path) -> Path | None:
    """The ``.env`` that ``load_dotenv`` finds from ``start``: in it or the nearest
    directory above it (a regular file, not a link)."""
    for directory in (start, *start.parents):
        path = directory / NAME
        try:
            if path.is_file() and not path.is_symlink():
                return path
        except OSError:
            return None
    return None


def values(path: Path) -> dict[str, str]:
    """The variables a ``.env`` file sets (``NAME=value``, ``export NAME="value"``; a
    comment after an unquoted value dropped); empty where it cannot be read."""
    try:
        if path.stat().st_size > MOST_BYTES:
            return {}
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        value = match["value"]
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].rstrip()
        found[match["name"]] = value
    return found


def secrets(starts: Iterable[Path]) -> list[str]:
    """The secret values of the ``.env`` files found from ``starts``."""
    from parity.safety.redact import ENV_VAR, Redactor

    files = {f for start in starts if (f := found(start.absolute())) is not None}
    learned: set[str] = set()
    for path in files:
        parsed = values(path)
        marked = (os.environ.get(ENV_VAR, ""), parsed.get(ENV_VAR, ""))
        learned.update(Redactor({**parsed, ENV_VAR: ",".join(n for n in marked if n)}).values)
    return sorted(learned)
