"""The history: an SQLite index of every bundle and comparison, rebuildable from them.

Bundles stay the truth; the index only makes them searchable (``parity ls``, ``show``,
``trend``) and ``parity reindex`` rebuilds it from the directories. Where it lives:
``--store PATH``, else ``$PARITY_STORE``, else ``$XDG_DATA_HOME/parity/index.sqlite``
(``~/.local/share/parity/index.sqlite``).

Identifiers come from content, so a rebuilt index gives every run the id it had: a
bundle's is ``b`` and the first 12 hex digits of the sha256 of its ``manifest.json``, a
comparison's ``c`` and those of its ``verdict.json``. Any unique prefix of an id works.

The schema is ``store.schema``'s; the figures kept of each bundle ``store.figures``'.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import statistics
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from parity.bundle import (
    COMPLIANCE_RUNS,
    MANIFEST,
    VERDICT,
    is_comparison,
    load_bundle,
    written_unix,
)
from parity.comparison import Comparison
from parity.errors import BundleError, SpecError, UsageError
from parity.model.bundle import Bundle
from parity.model.codec import decode, dumps, loads
from parity.model.history import BundleRow, RunRecord, RunRow, TrendPoint
from parity.model.verdict import Verdict
from parity.spec import parse_side
from parity.store.figures import BUNDLE_METRICS, COMPARISON_METRICS, bundle_metrics
from parity.store.schema import check_sqlite, default_path, migrate

log = logging.getLogger("parity")


@dataclass
class ReindexResult:
    """What the index holds after a reindex, what it forgot, and what it could not read."""

    comparisons: int = 0
    bundles: int = 0
    removed: int = 0
    problems: list[str] = field(default_factory=list)


class Store:
    """An open index; use ``Store.open(path)`` as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    @contextmanager
    def open(cls, path: Path | str | None = None) -> Iterator[Store]:
        """The index at ``path``, made where there is none; if it was made here and bad
        input ends its use (a UsageError), it is removed again: nothing half-written."""
        path = Path(path) if path is not None else default_path()
        made: list[Path] = []
        try:
            made = [p for p in (path, *path.parents) if not p.exists()]
            check_sqlite(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), timeout=30)
        except (OSError, sqlite3.Error, ValueError) as exc:
            _remove(made)
            raise UsageError(
                f"cannot open the index {path} ({exc}): choose another --store"
            ) from exc
        try:
            with closing(conn):
                conn.row_factory = sqlite3.Row
                try:
                    conn.execute("PRAGMA foreign_keys = ON")
                    migrate(conn, path)
                except sqlite3.DatabaseError as exc:
                    raise UsageError(
                        f"{path} is not a parity index ({exc}): delete it and run parity "
                        "reindex DIRS, or choose another --store"
                    ) from exc
                yield cls(conn, path)
        except UsageError:
            _remove(made)
            raise

    # -- writing -----------------------------------------------------------------------

    def index_bundle(
        self, bundle: Bundle, *, comparison_id: str | None = None, role: str | None = None
    ) -> str:
        """Index one loaded bundle (any status); returns its id (from the sha256 of its
        manifest, as its digest lists it)."""
        path = bundle.path.resolve()
        m = bundle.manifest
        bid = "b" + bundle.digest[MANIFEST][:12]
        env, desc = m.environment, m.workload.description
        now = time.time()
        with self.conn:
            self.conn.execute("DELETE FROM bundles WHERE path = ? AND id != ?", (str(path), bid))
            self.conn.execute(
                """INSERT INTO bundles (id, path, comparison_id, role, run, status, reason,
                    side_spec, device_type, device_name, workload, size, kind, fingerprint,
                    parity_version, torch_version, hostname, started_unix, finished_unix,
                    indexed_unix)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET path = excluded.path,
                    comparison_id = coalesce(excluded.comparison_id, bundles.comparison_id),
                    role = coalesce(excluded.role, bundles.role), run = excluded.run,
                    status = excluded.status, reason = excluded.reason,
                    indexed_unix = excluded.indexed_unix""",
                (
                    bid,
                    str(path),
                    comparison_id,
                    role or m.role,
                    path.name,
                    m.status,
                    m.reason,
                    str(m.side),
                    m.side.device,
                    env.device.name if env else None,
                    desc.name,
                    desc.size,
                    desc.kind,
                    m.workload.fingerprint,
                    m.parity_version,
                    env.torch.version if env else None,
                    env.hostname if env else None,
                    m.started_unix,
                    m.finished_unix,
                    now,
                ),
            )
            self.conn.execute("DELETE FROM metrics WHERE bundle_id = ?", (bid,))
            self.conn.executemany(
                "INSERT INTO metrics (bundle_id, name, value) VALUES (?, ?, ?)",
                [(bid, k, v) for k, v in bundle_metrics(bundle).items()],
            )
        return bid

    def index_comparison(self, comparison: Comparison) -> str:
        """Index a judged comparison (its verdict and both sides' bundles, as held in
        memory); returns its id (from the sha256 of its ``verdict.json``)."""
        path = comparison.out.resolve()
        verdict, sha = comparison.verdict, comparison.verdict_sha256
        if verdict is None or sha is None:
            raise ValueError("index a comparison once its verdict is written")
        cid = "c" + sha[:12]
        finished = [
            t for _, b in comparison.bundles() if (t := b.manifest.finished_unix) is not None
        ]
        w, speed = verdict.workload, verdict.speed
        with self.conn:
            self.conn.execute(
                "DELETE FROM comparisons WHERE path = ? AND id != ?", (str(path), cid)
            )
            self.conn.execute(
                """INSERT OR REPLACE INTO comparisons (id, path, time_unix, indexed_unix,
                    workload, size, kind, fingerprint, baseline_spec, target_spec,
                    baseline_device, target_device, passed, exit_code, speed_ratio,
                    speed_low, speed_high, speed_verdict, verdict)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    cid,
                    str(path),
                    max(finished) if finished else written_unix(path),
                    time.time(),
                    w.name,
                    w.size,
                    w.kind,
                    w.fingerprint,
                    str(verdict.sides.baseline.side),
                    str(verdict.sides.target.side),
                    verdict.sides.baseline.device_name,
                    verdict.sides.target.device_name,
                    int(verdict.passed),
                    verdict.exit_code,
                    speed.ratio if speed else None,
                    speed.interval.low if speed else None,
                    speed.interval.high if speed else None,
                    speed.verdict if speed else None,
                    dumps(verdict, indent=None),
                ),
            )
        for role, bundle in comparison.bundles():
            self.index_bundle(bundle, comparison_id=cid, role=role)
        return cid

    def index_path(self, path: Path) -> str:
        """A comparison directory or a bundle directory, whichever ``path`` is, loaded
        through ``parity.comparison`` (each file read once)."""
        path = path.resolve()
        if is_comparison(path):
            return self.index_comparison(Comparison.load(path, strict=True))
        return self.index_bundle(load_bundle(path))

    def index(self, item: Comparison | Bundle) -> str:
        """A comparison or a bundle held in memory."""
        if isinstance(item, Comparison):
            return self.index_comparison(item)
        return self.index_bundle(item)

    def prune(self) -> int:
        """Forget runs whose directories are gone; returns how many were forgotten."""
        gone = 0
        with self.conn:
            for table in ("comparisons", "bundles"):
                rows = self.conn.execute(f"SELECT id, path FROM {table}").fetchall()
                for row in rows:
                    if not Path(row["path"]).is_dir():
                        self.conn.execute(f"DELETE FROM {table} WHERE id = ?", (row["id"],))
                        gone += 1
        return gone

    def reindex(self, dirs: list[Path]) -> ReindexResult:
        """Index every comparison and bundle under ``dirs`` and forget vanished ones.

        With no ``dirs``: the directories the index already knows, and ``./parity-runs``.
        """
        result = ReindexResult()
        if not dirs:
            known = self.conn.execute(
                "SELECT path FROM comparisons UNION "
                "SELECT path FROM bundles WHERE comparison_id IS NULL"
            ).fetchall()
            dirs = [Path(r["path"]) for r in known]
            if Path("parity-runs").is_dir():
                dirs.append(Path("parity-runs"))
            if not dirs:
                raise UsageError(
                    "nothing to reindex: the index knows no runs; pass the directories that "
                    "hold them, e.g. parity reindex parity-runs"
                )
        for d in dirs:
            try:
                if not d.is_dir():
                    if d.exists():
                        result.problems.append(f"{d} is not a directory")
                    continue
            except OSError as exc:  # a name too long, no permission
                result.problems.append(f"{d}: {exc.strerror or exc}")
                continue
            for path in _walk(d):
                try:
                    self.index_path(path)
                except (BundleError, OSError, KeyError, TypeError, AttributeError) as exc:
                    result.problems.append(f"{path}: {exc}")
        result.removed = self.prune()
        count = self.conn.execute(
            "SELECT (SELECT count(*) FROM comparisons), (SELECT count(*) FROM bundles)"
        ).fetchone()
        result.comparisons, result.bundles = int(count[0]), int(count[1])
        return result

    # -- reading -----------------------------------------------------------------------

    def runs(
        self, *, workload: str | None = None, device: str | None = None, limit: int = 50
    ) -> list[RunRow]:
        """Comparisons and stand-alone bundles, newest first."""
        rows: list[RunRow] = []
        for r in self._comparisons("", workload, device):
            rows.append(
                RunRow(
                    id=r["id"],
                    type="compare",
                    time_unix=r["time_unix"],
                    workload=r["workload"],
                    size=r["size"],
                    sides=_sides(r),
                    result="PASS" if r["passed"] else "FAIL",
                    speed_ratio=r["speed_ratio"],
                    speed_verdict=r["speed_verdict"],
                    path=r["path"],
                )
            )
        alone = self.conn.execute(
            "SELECT b.*, m.value AS median FROM bundles b LEFT JOIN metrics m "
            "ON m.bundle_id = b.id AND m.name = 'median_step_s' WHERE b.comparison_id IS NULL"
        ).fetchall()
        for r in alone:
            if not _matches(r["workload"], workload):
                continue
            if device and not _device_matches(r["side_spec"], r["device_name"], device):
                continue
            rows.append(
                RunRow(
                    id=r["id"],
                    type="run",
                    time_unix=_finished(r) or r["indexed_unix"],
                    workload=r["workload"],
                    size=r["size"],
                    sides=_sides(r),
                    result=r["status"],
                    median_step_s=r["median"],
                    path=r["path"],
                )
            )
        rows.sort(key=lambda x: x.time_unix or 0.0, reverse=True)
        return rows[:limit]

    def resolve(self, ident: str) -> tuple[str, str]:
        """An id or unique id prefix -> (table, full id); UsageError when none or several."""
        ident = ident.strip()
        if not ident:
            raise UsageError("give a run id as parity ls shows it, e.g. c1a2b3c4")
        hits = [
            (table, r["id"])
            for table in ("comparisons", "bundles")
            for r in self.conn.execute(
                f"SELECT id FROM {table} WHERE id LIKE ? ESCAPE '\\'",
                (ident.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
            )
        ]
        if not hits:
            raise UsageError(
                f"no run {ident!r} in the index {self.path}: see parity ls, or parity reindex "
                "DIRS if the index is stale"
            )
        if len(hits) > 1:
            raise UsageError(
                f"{ident!r} is ambiguous ({', '.join(h[1] for h in hits[:5])}): give more of the id"
            )
        return hits[0]

    def show(self, ident: str) -> RunRecord:
        """One comparison (with its bundles and verdict) or one bundle (with its figures)."""
        table, rid = self.resolve(ident)
        r = self.conn.execute(f"SELECT * FROM {table} WHERE id = ?", (rid,)).fetchone()
        record = partial(RunRecord, id=rid, path=r["path"], workload=r["workload"], size=r["size"])
        if table == "comparisons":
            bundles = tuple(
                BundleRow(
                    id=b["id"],
                    role=b["role"],
                    run=b["run"],
                    status=b["status"],
                    side_spec=b["side_spec"],
                    device_name=b["device_name"],
                    path=b["path"],
                    metrics=self._metrics(b["id"]),
                )
                for b in self.conn.execute(
                    "SELECT * FROM bundles WHERE comparison_id = ? ORDER BY role, run", (rid,)
                )
            )
            return record(
                type="compare",
                time_unix=r["time_unix"],
                sides=_sides(r),
                passed=bool(r["passed"]),
                exit_code=r["exit_code"],
                verdict=decode(Verdict, loads(r["verdict"])),
                bundles=bundles,
            )
        return record(
            type="run",
            time_unix=_finished(r),
            sides=_sides(r),
            status=r["status"],
            reason=r["reason"],
            side_spec=r["side_spec"],
            device_name=r["device_name"],
            metrics=self._metrics(rid),
        )

    def _metrics(self, bundle_id: str) -> dict[str, float]:
        return {
            r["name"]: r["value"]
            for r in self.conn.execute(
                "SELECT name, value FROM metrics WHERE bundle_id = ? ORDER BY name", (bundle_id,)
            )
        }

    def metric_names(self) -> list[str]:
        names = {r[0] for r in self.conn.execute("SELECT DISTINCT name FROM metrics")}
        return sorted(names | set(BUNDLE_METRICS) | set(COMPARISON_METRICS))

    def trend(
        self,
        metric: str,
        *,
        workload: str | None = None,
        device: str | None = None,
        side: str | None = None,
    ) -> list[TrendPoint]:
        """A metric over time, oldest first: one point per comparison and side (the median
        over its ok repeats; compliance runs left out) or per stand-alone run."""
        if metric in COMPARISON_METRICS:
            return self._comparison_trend(metric, workload, device)
        if metric not in self.metric_names():
            raise UsageError(
                f"unknown metric {metric!r}: use one of {', '.join(self.metric_names())}"
            )
        rows = self.conn.execute(
            """SELECT b.id, b.comparison_id, b.role, b.run, b.side_spec, b.device_name,
                      b.workload, b.size, b.started_unix, b.finished_unix, m.value,
                      c.time_unix AS comparison_time
               FROM metrics m JOIN bundles b ON b.id = m.bundle_id
               LEFT JOIN comparisons c ON c.id = b.comparison_id
               WHERE m.name = ? AND b.status = 'ok'""",
            (metric,),
        ).fetchall()
        groups: dict[tuple[str, str], list[sqlite3.Row]] = {}
        for r in rows:
            if r["run"] in COMPLIANCE_RUNS and r["comparison_id"]:
                continue
            if not _matches(r["workload"], workload):
                continue
            if device and not _device_matches(r["side_spec"], r["device_name"], device):
                continue
            if side and r["side_spec"] != side and r["role"] != side:
                continue
            key = (r["comparison_id"] or r["id"], r["role"] or "")
            groups.setdefault(key, []).append(r)
        points = []
        for (run_id, role), members in groups.items():
            first = members[0]
            points.append(
                TrendPoint(
                    id=run_id,
                    time_unix=first["comparison_time"]
                    or first["finished_unix"]
                    or first["started_unix"],
                    workload=first["workload"],
                    size=first["size"],
                    role=role or None,
                    side=first["side_spec"],
                    value=statistics.median(m["value"] for m in members),
                    n=len(members),
                )
            )
        points.sort(key=lambda p: (p.time_unix or 0.0, p.role or ""))
        return points

    def _comparisons(
        self, order: str, workload: str | None, device: str | None
    ) -> list[sqlite3.Row]:
        """The comparisons of ``workload`` with ``device`` on either side (None: any)."""
        return [
            r
            for r in self.conn.execute(f"SELECT * FROM comparisons{order}").fetchall()
            if _matches(r["workload"], workload)
            and (
                not device
                or _device_matches(r["baseline_spec"], r["baseline_device"], device)
                or _device_matches(r["target_spec"], r["target_device"], device)
            )
        ]

    def _comparison_trend(
        self, metric: str, workload: str | None, device: str | None
    ) -> list[TrendPoint]:
        points = []
        for r in self._comparisons(" ORDER BY time_unix", workload, device):
            ratio = r["speed_ratio"]
            value = (1 / ratio if ratio else None) if metric == "speedup" else r[metric]
            if value is None:
                continue
            points.append(
                TrendPoint(
                    id=r["id"],
                    time_unix=r["time_unix"],
                    workload=r["workload"],
                    size=r["size"],
                    role="target/baseline",
                    side=f"{r['target_spec']} / {r['baseline_spec']}",
                    value=float(value),
                    n=1,
                )
            )
        return points


def _remove(made: list[Path]) -> None:
    """Remove an index file (and the directories) that ``Store.open`` made."""
    for p in made:
        for extra in ("", "-journal", "-wal", "-shm") if p is made[0] else ("",):
            target = p.with_name(p.name + extra)
            with suppress(OSError):
                if target.is_dir():
                    target.rmdir()
                else:
                    target.unlink(missing_ok=True)


def _walk(root: Path) -> Iterator[Path]:
    """Comparison directories and stand-alone bundles under ``root``, top-down; the
    bundles inside a comparison are indexed with it, not on their own."""
    for current, subdirs, files in os.walk(root):
        here = Path(current)
        if VERDICT in files or MANIFEST in files:
            yield here
            subdirs.clear()
        else:
            subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))


def _sides(r: sqlite3.Row) -> str:
    """A row's sides as the index lists them: a bundle's side, or a comparison's pair."""
    if "side_spec" in r.keys():  # noqa: SIM118 - a Row iterates over its values
        return str(r["side_spec"])
    return f"{r['baseline_spec']} -> {r['target_spec']}"


def _finished(r: sqlite3.Row) -> float | None:
    """When a bundle's run ended (or began, where it never ended)."""
    return r["finished_unix"] or r["started_unix"]  # type: ignore[no-any-return]


def _matches(value: str | None, wanted: str | None) -> bool:
    return wanted is None or value == wanted


def _device_matches(spec: str | None, device_name: str | None, wanted: str) -> bool:
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


def index_quietly(item: Comparison | Bundle, store: Path | None = None) -> str | None:
    """Index what ``parity compare`` or ``parity run`` just made, from memory; a failure
    only warns."""
    path = item.out if isinstance(item, Comparison) else item.path
    try:
        with Store.open(store) as s:
            return s.index(item)
    except Exception as exc:
        log.warning(
            "parity: warning: %s was not added to the history index (%s); the results are "
            "complete: parity reindex %s adds it later",
            path,
            exc,
            path,
        )
        return None
