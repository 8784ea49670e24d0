"""Rebuilding the index from the bundles (they are the truth): every comparison and
bundle under some directories or URL prefixes indexed, vanished ones forgotten."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import RowMapping, Select, func, select

from parity import storage
from parity.errors import BundleError, UsageError
from parity.store.schema import bundles, comparisons, serving
from parity.store.walk import ReindexResult, walk


class Store(Protocol):
    """What a reindex needs of the index (``store.index.Store``)."""

    def read(self, stmt: Select[Any]) -> Sequence[RowMapping]: ...

    def delete(self, table: Any, rid: str) -> None: ...

    def index_path(self, target: Path | str) -> str: ...


#: what a run that cannot be read raises while it is indexed (reported, not fatal)
UNREADABLE = (BundleError, OSError, KeyError, TypeError, AttributeError)


def prune(store: Store) -> int:
    """Forget runs whose directories (or URLs) are gone; returns how many."""
    gone = 0
    for table in (comparisons, serving, bundles):
        for row in store.read(select(table.c.id, table.c.path)):
            if not storage.exists(row["path"]):
                store.delete(table, row["id"])
                gone += 1
    return gone


def _known(store: Store) -> list[Path | str]:
    known = store.read(
        select(comparisons.c.path).union(
            select(serving.c.path),
            select(bundles.c.path).where(bundles.c.comparison_id.is_(None)),
        )  # type: ignore[arg-type]
    )
    dirs: list[Path | str] = [r["path"] for r in known]
    if Path("parity-runs").is_dir():
        dirs.append("parity-runs")
    if not dirs:
        raise UsageError(
            "nothing to reindex: the index knows no runs; pass the directories that "
            "hold them, e.g. parity reindex parity-runs"
        )
    return dirs


def reindex(store: Store, dirs: Sequence[Path | str]) -> ReindexResult:
    """Index every comparison and bundle under ``dirs`` and forget vanished ones; with no
    ``dirs``: those the index already knows, and ``./parity-runs``."""
    result = ReindexResult()
    for target in dirs or _known(store):
        if storage.is_url(target):
            _urls(store, str(target), result)
            continue
        d = storage.local(target)
        try:
            if not d.is_dir():
                if d.exists():
                    result.problems.append(f"{d} is not a directory")
                continue
        except OSError as exc:  # a name too long, no permission
            result.problems.append(f"{d}: {exc.strerror or exc}")
            continue
        for path in walk(d):
            try:
                store.index_path(path)
            except UNREADABLE as exc:
                result.problems.append(f"{path}: {exc}")
    result.removed = prune(store)
    for table in (comparisons, serving, bundles):
        rows = store.read(select(func.count().label("n")).select_from(table))
        count = int(rows[0]["n"])
        if table is comparisons:
            result.comparisons = count
        elif table is serving:
            result.serving = count
        else:
            result.bundles = count
    return result


def _urls(store: Store, prefix: str, result: ReindexResult) -> None:
    try:
        roots = storage.committed(prefix)
    except (UsageError, OSError) as exc:
        result.problems.append(f"{storage.shown(prefix)}: {exc}")
        return
    for url in roots:
        try:
            store.index_path(url)
        except UNREADABLE as exc:
            result.problems.append(f"{url}: {exc}")
