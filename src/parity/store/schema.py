"""The index's SQLite schema, where the index lives, and content identifiers.

Schema (``PRAGMA user_version`` holds ``SCHEMA_VERSION``)::

    comparisons  id, path, time_unix, workload, size, kind, fingerprint, baseline_spec,
                 target_spec, baseline_device, target_device, passed, exit_code,
                 speed_ratio, speed_low, speed_high, speed_verdict, verdict (JSON)
    bundles      id, path, comparison_id -> comparisons, role, run (r00, reseeded, ...),
                 status, reason, side_spec, device_type, device_name, workload, size,
                 kind, fingerprint, parity_version, torch_version, hostname,
                 started_unix, finished_unix
    metrics      bundle_id -> bundles, name, value      (see ``store.figures``)
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from parity.errors import UsageError

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE comparisons (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    time_unix REAL NOT NULL,
    indexed_unix REAL NOT NULL,
    workload TEXT, size TEXT, kind TEXT, fingerprint TEXT,
    baseline_spec TEXT, target_spec TEXT, baseline_device TEXT, target_device TEXT,
    passed INTEGER, exit_code INTEGER,
    speed_ratio REAL, speed_low REAL, speed_high REAL, speed_verdict TEXT,
    verdict TEXT NOT NULL
);
CREATE TABLE bundles (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    comparison_id TEXT REFERENCES comparisons(id) ON DELETE CASCADE,
    role TEXT, run TEXT,
    status TEXT NOT NULL, reason TEXT,
    side_spec TEXT, device_type TEXT, device_name TEXT,
    workload TEXT, size TEXT, kind TEXT, fingerprint TEXT,
    parity_version TEXT, torch_version TEXT, hostname TEXT,
    started_unix REAL, finished_unix REAL,
    indexed_unix REAL NOT NULL
);
CREATE TABLE metrics (
    bundle_id TEXT NOT NULL REFERENCES bundles(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (bundle_id, name)
);
CREATE INDEX bundles_comparison ON bundles(comparison_id);
CREATE INDEX bundles_workload ON bundles(workload, started_unix);
CREATE INDEX comparisons_workload ON comparisons(workload, time_unix);
CREATE INDEX metrics_name ON metrics(name);
"""


def default_path() -> Path:
    """``$PARITY_STORE``, else the user's data directory."""
    if os.environ.get("PARITY_STORE"):
        return Path(os.environ["PARITY_STORE"]).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "parity" / "index.sqlite"


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"the index {path} has schema version {version}, newer than this parity knows "
            f"({SCHEMA_VERSION}): upgrade parity or choose another --store"
        )
    tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    if version == 0 and tables:
        raise UsageError(f"{path} is an SQLite file but not a parity index: choose another --store")
    with conn:
        conn.executescript(SCHEMA)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def check_sqlite(path: Path) -> None:
    """Refuse a file that is something else: SQLite would take a short one for an empty
    database and write over it."""
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise UsageError(f"{path} is not a parity index: choose another --store")
