"""The history: an index of every bundle and comparison (SQLite embedded, PostgreSQL for a
team), rebuildable from them.

Bundles stay the truth; the index only makes them searchable (``parity ls``, ``show``,
``trend``) and ``parity reindex`` rebuilds it from the directories. Where it lives and how
it is reached: ``store.engine``. Many machines may write at once: every write is one
transaction of upserts, retried when the database reports a conflict.

Identifiers come from content, so a rebuilt index gives every run the id it had: a
bundle's is ``b`` and the first 12 hex digits of the sha256 of its ``manifest.json``, a
comparison's ``c`` and those of its ``verdict.json``. Any unique prefix of an id works.

The schema is ``store.schema``'s; the figures kept of each bundle ``store.figures``'; the
queries (``ls``, ``show``, ``trend``) ``store.queries``'.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, RowMapping, Select, and_, case, func, not_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, OperationalError

from parity import storage
from parity.bundle import MANIFEST, is_comparison, load_bundle, written_unix
from parity.comparison import Comparison
from parity.errors import UsageError
from parity.model.bundle import Bundle
from parity.model.history import RunRecord, RunRow, TrendPoint
from parity.store import queries
from parity.store.engine import Location, connect, locate, mask
from parity.store.figures import bundle_metrics
from parity.store.rows import Row, bundle_row, comparison_row, serving_row
from parity.store.schema import bundles, comparisons, metrics, migrate, serving
from parity.store.walk import ReindexResult, remove_made

log = logging.getLogger("parity")
T = TypeVar("T")
#: how often a write that lost a conflict to another writer is tried again
RETRIES = 8


def _busy(exc: DBAPIError) -> bool:
    """SQLite gave up waiting for another process's lock."""
    return "locked" in str(exc.orig) or "busy" in str(exc.orig)


def _read_only(exc: DBAPIError) -> bool:
    """The index (or its directory, where SQLite keeps its journal) cannot be written."""
    text = str(exc.orig).lower()
    return "readonly" in text or "read-only" in text or "read only" in text


def _read_only_index(loc: Location) -> UsageError:
    return UsageError(
        f"the index {loc.shown} is read-only for this user (it is not corrupt): give write "
        "access to it and its directory, or choose another --store"
    )


def _locked(loc: Location) -> UsageError:
    from parity.store import engine

    return UsageError(
        f"the index {loc.shown} is locked by another parity process (waited "
        f"{engine.SQLITE_TIMEOUT_S:g} s): run again when it is done, or choose another --store"
    )


class Store:
    """An open index; use ``Store.open(target)`` as a context manager."""

    def __init__(self, engine: Engine, location: Location) -> None:
        self.engine = engine
        self.location = location
        #: where the index is, as parity shows it (a password masked)
        self.path = location.shown

    @classmethod
    @contextmanager
    def open(cls, target: Path | str | None = None) -> Iterator[Store]:
        """The index ``target`` names (a file or a database URL), made where there is none;
        if a file was made here and bad input ends its use (a UsageError), it is removed
        again: nothing half-written."""
        loc = locate(target)
        made: list[Path] = []
        try:  # (a name too long for the file system raises on exists(): OSError, below)
            made = [p for p in (loc.file, *loc.file.parents) if not p.exists()] if loc.file else []
            if loc.file:
                _check_sqlite(loc.file)
                loc.file.parent.mkdir(parents=True, exist_ok=True)
            engine = connect(loc)
            try:
                with engine.begin() as conn:
                    migrate(conn, loc.shown)
            except OperationalError as exc:  # SQLite: busy, a directory, no permission
                if _busy(exc):
                    raise _locked(loc) from None
                if _read_only(exc):
                    raise _read_only_index(loc) from None
                raise UsageError(
                    f"cannot open the index {loc.shown} ({mask(str(exc.orig), loc.url)}): "
                    "choose another --store"
                ) from None
            except DBAPIError as exc:
                raise UsageError(
                    f"{loc.shown} is not a parity index ({mask(str(exc.orig), loc.url)}): "
                    "delete it and run parity reindex DIRS, or choose another --store"
                ) from None
        except OSError as exc:
            remove_made(made)
            raise UsageError(
                f"cannot open the index {loc.shown} ({exc}): choose another --store"
            ) from exc
        except UsageError:
            remove_made(made)
            raise
        try:
            yield cls(engine, loc)
        except UsageError:  # bad input ended its use: an index made here goes again
            engine.dispose()
            remove_made(made)
            raise
        except DBAPIError as exc:  # reading it: busy past the wait, or corrupt
            if _busy(exc):
                raise _locked(loc) from None
            if _read_only(exc):
                raise _read_only_index(loc) from None
            if type(exc.orig).__name__ not in ("DatabaseError", "OperationalError"):
                raise  # a constraint or a bug, not the index's state
            raise UsageError(
                f"{loc.shown} is not a parity index or is corrupt "
                f"({mask(str(exc.orig), loc.url)}): delete it and run parity reindex DIRS, "
                "or choose another --store"
            ) from None
        finally:
            engine.dispose()

    def _write(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one transaction, tried again when another writer won a conflict."""
        for attempt in range(RETRIES):
            try:
                with self.engine.begin() as conn:
                    return work(conn)
            except OperationalError:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    def _read(self, stmt: Select[Any]) -> Sequence[RowMapping]:
        with self.engine.connect() as conn:
            return conn.execute(stmt).mappings().all()

    def _upsert(self, conn: Connection, table: Any, row: Row, keep: set[str]) -> None:
        """Insert ``row``; where its key is there, update every column but ``keep``, which
        keeps the stored value unless the new one is given. A ``path`` stored as a URL is
        never replaced by a local one: the run is where the team reads it, not a copy."""
        insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        stmt = insert(table).values(**row)
        keys = [c.name for c in table.primary_key.columns]
        update: dict[str, Any] = {
            k: func.coalesce(stmt.excluded[k], table.c[k]) if k in keep else stmt.excluded[k]
            for k in row
            if k not in keys
        }
        if "path" in update:
            stays = and_(table.c.path.like("%://%"), not_(stmt.excluded.path.like("%://%")))
            update["path"] = case((stays, table.c.path), else_=stmt.excluded.path)
        conn.execute(stmt.on_conflict_do_update(index_elements=keys, set_=update))

    # -- writing -----------------------------------------------------------------------

    def index_bundle(
        self,
        bundle: Bundle,
        *,
        comparison_id: str | None = None,
        role: str | None = None,
        key: str | None = None,
    ) -> str:
        """Index one loaded bundle (any status), recorded as ``key`` (its URL) or its path;
        returns its id (from the sha256 of its manifest, as its digest lists it)."""
        path = bundle.path.resolve()
        where = key or str(path)
        bid = "b" + bundle.digest[MANIFEST][:12]
        row = bundle_row(path, bundle, bid, comparison_id, role) | {"path": where}
        figures = bundle_metrics(bundle)

        def work(conn: Connection) -> str:
            conn.execute(bundles.delete().where(bundles.c.path == where, bundles.c.id != bid))
            self._upsert(conn, bundles, row, keep={"comparison_id", "role"})
            conn.execute(
                metrics.delete().where(
                    metrics.c.bundle_id == bid, metrics.c.name.not_in(list(figures))
                )
            )
            for name, value in figures.items():
                self._upsert(conn, metrics, {"bundle_id": bid, "name": name, "value": value}, set())
            return bid

        return self._write(work)

    def index_comparison(self, comparison: Comparison, key: str | None = None) -> str:
        """Index a judged comparison (its verdict and both sides' bundles, as held in
        memory), recorded as ``key`` (its URL) or its path; returns its id (from the
        sha256 of its ``verdict.json``)."""
        path = comparison.out.resolve()
        where = key or str(path)
        verdict, sha = comparison.verdict, comparison.verdict_sha256
        if verdict is None or sha is None:
            raise ValueError("index a comparison once its verdict is written")
        cid = "c" + sha[:12]
        finished = [
            t for _, b in comparison.bundles() if (t := b.manifest.finished_unix) is not None
        ]
        time_unix = max(finished) if finished else written_unix(path)
        row = comparison_row(path, verdict, cid, time_unix) | {"path": where}

        def work(conn: Connection) -> None:
            conn.execute(
                comparisons.delete().where(comparisons.c.path == where, comparisons.c.id != cid)
            )
            self._upsert(conn, comparisons, row, set())

        self._write(work)
        for role, bundle in comparison.bundles():
            local = bundle.path.resolve()
            inner = f"{key}/{local.relative_to(path).as_posix()}" if key else None
            self.index_bundle(bundle, comparison_id=cid, role=role, key=inner)
        return cid

    def index_serving(self, out: Path, key: str | None = None) -> str:
        """Index a ``parity serve`` comparison (its verdict and each side's record),
        recorded as ``key`` (its URL) or its path; returns its id (``s`` and the sha256 of
        its ``verdict.json``)."""
        from parity.serving.bundle import read_comparison

        path = out.resolve()
        where = key or str(path)
        verdict, sha, sides = read_comparison(path)
        sid = "s" + sha[:12]
        row = serving_row(path, verdict, sides, sid, written_unix(path)) | {"path": where}

        def work(conn: Connection) -> None:
            conn.execute(serving.delete().where(serving.c.path == where, serving.c.id != sid))
            self._upsert(conn, serving, row, set())

        self._write(work)
        return sid

    def index_path(self, target: Path | str) -> str:
        """A comparison, a serving comparison or a bundle, whichever ``target`` (a
        directory or a URL) is, loaded through ``parity.comparison`` (each file read once)."""
        from parity.serving.bundle import is_serving_comparison

        key = storage.shown(str(target)) if storage.is_url(target) else None
        path = storage.readable(target).resolve()
        if is_serving_comparison(path):
            return self.index_serving(path, key)
        if is_comparison(path):
            return self.index_comparison(Comparison.load(path, strict=True), key)
        return self.index_bundle(load_bundle(path), key=key)

    def index(self, item: Comparison | Bundle, key: str | None = None) -> str:
        """A comparison or a bundle held in memory (``key``: the URL it was published at)."""
        if isinstance(item, Comparison):
            return self.index_comparison(item, key)
        return self.index_bundle(item, key=key)

    def prune(self) -> int:
        """Forget runs whose directories (or URLs) are gone; returns how many."""
        from parity.store.reindex import prune

        return prune(self)

    def reindex(self, dirs: Sequence[Path | str]) -> ReindexResult:
        """Index every comparison and bundle under ``dirs`` (directories or URL prefixes)
        and forget vanished ones.

        With no ``dirs``: the directories the index already knows, and ``./parity-runs``.
        """
        from parity.store.reindex import reindex

        return reindex(self, dirs)

    def delete(self, table: Any, rid: str) -> None:
        def work(conn: Connection) -> None:
            conn.execute(table.delete().where(table.c.id == rid))

        self._write(work)

    def read(self, stmt: Select[Any]) -> Sequence[RowMapping]:
        return self._read(stmt)

    # -- reading (``store.queries``) -------------------------------------------------------

    def runs(
        self, *, workload: str | None = None, device: str | None = None, limit: int = 50
    ) -> list[RunRow]:
        """Comparisons and stand-alone bundles, newest first."""
        return queries.runs(self, workload=workload, device=device, limit=limit)

    def resolve(self, ident: str) -> tuple[str, str]:
        """An id or unique id prefix -> (table, full id); UsageError when none or several."""
        return queries.resolve(self, ident)

    def show(self, ident: str) -> RunRecord:
        """One comparison (with its bundles and verdict) or one bundle (with its figures)."""
        return queries.show(self, ident)

    def metric_names(self) -> list[str]:
        return queries.metric_names(self)

    def trend(
        self,
        metric: str,
        *,
        workload: str | None = None,
        device: str | None = None,
        side: str | None = None,
    ) -> list[TrendPoint]:
        """A metric over time, oldest first (``queries.trend``)."""
        return queries.trend(self, metric, workload=workload, device=device, side=side)


def _check_sqlite(path: Path) -> None:
    """Refuse a file that is something else: SQLite would take a short one for an empty
    database and write over it."""
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise UsageError(f"{path} is not a parity index: choose another --store")


def index_quietly(
    item: Comparison | Bundle | Path, store: Path | str | None = None, *, url: str | None = None
) -> str | None:
    """Index what ``parity compare`` or ``parity run`` just made, from memory, or the
    directory ``parity serve`` just wrote (``url``: where it was published, recorded
    instead of its local copy); a failure only warns."""
    if isinstance(item, Path):
        path: Path | str = url or item
    else:
        path = url or (item.out if isinstance(item, Comparison) else item.path)
    try:
        with Store.open(store) as s:
            key = storage.shown(url) if url else None
            if isinstance(item, Path):
                return s.index_serving(item, key)
            return s.index(item, key)
    except Exception as exc:
        log.warning(
            "parity: warning: %s was not added to the history index (%s); the results are "
            "complete: parity reindex %s adds it later",
            path,
            mask(str(exc)),
            path,
        )
        return None
