"""Finding runs under a directory and matching them to ``ls``/``trend`` filters (the
index's helpers that touch no database)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from parity.bundle import MANIFEST, VERDICT
from parity.errors import SpecError
from parity.model.spec import parse_side

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


def device_matches(spec: str | None, device_name: str | None, wanted: str) -> bool:
    """``cuda`` matches ``cuda``, ``cuda:1+bf16``; a full spec matches itself; else the
    device name must contain it (case-insensitive)."""
    if spec:
        try:
            side = parse_side(spec)  # the index holds a side as it writes
        except SpecError:
            side = None
        if wanted == spec or (side is not None and wanted in (side.device_string, side.device)):
            return True
    return bool(device_name) and wanted.lower() in str(device_name).lower()


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
