"""Finding runs under a directory and matching them to ``ls``/``trend`` filters (the
index's helpers that touch no database)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.bundle import MANIFEST, VERDICT

ROLES = ("baseline", "target")


@dataclass
class ReindexResult:
    """What the index holds after a reindex, what it forgot, and what it could not read."""

    comparisons: int = 0
    #: ``parity serve`` comparisons
    serving: int = 0
    bundles: int = 0
    removed: int = 0
    problems: list[str] = field(default_factory=list)


def walk(root: Path) -> Iterator[Path]:
    """Comparison directories and stand-alone bundles under ``root``, top-down; the
    bundles inside a comparison are indexed with it, not on their own."""
    for current, subdirs, files in os.walk(root):
        here = Path(current)
        if VERDICT in files or MANIFEST in files:
            yield here
            subdirs.clear()
        else:
            subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))


def matches(value: str | None, wanted: str | None) -> bool:
    return wanted is None or value == wanted


#: a side's columns in the index: its spec, device type, device string, device name
SIDE_COLUMNS = {
    "run": ("side_spec", "device_type", "device_string", "device_name"),
    **{
        role: tuple(f"{role}_{c}" for c in ("spec", "device_type", "device_string", "device"))
        for role in ROLES
    },
}


def device_matches(row: Mapping[Any, Any], side: str, wanted: str) -> bool:
    """Whether ``side`` of ``row`` (``run`` for a bundle's own, else a comparison's role)
    runs on ``wanted``: ``cuda`` matches ``cuda``, ``cuda:1+bf16``; a full spec matches
    itself; else the device name must contain it (case-insensitive). The index holds a
    side's typed parts in columns of their own (``store.schema``): nothing is parsed here."""
    *typed, name = (row[c] for c in SIDE_COLUMNS[side])
    if wanted in set(typed) - {None, ""}:
        return True
    return bool(name) and wanted.lower() in str(name).lower()


def remove_made(made: list[Path]) -> None:
    """Remove an index file (and the directories) that ``Store.open`` made."""
    for p in made:
        for extra in ("", "-journal", "-wal", "-shm") if p is made[0] else ("",):
            target = p.with_name(p.name + extra)
            with suppress(OSError):
                if target.is_dir():
                    target.rmdir()
                else:
                    target.unlink(missing_ok=True)
