"""The index's schema, one for SQLite and PostgreSQL (SQLAlchemy Core), its version and
migrations, and content identifiers.

Schema (version ``SCHEMA_VERSION``, held in ``parity_meta`` and, on SQLite, also in
``PRAGMA user_version``)::

    comparisons  id, path, time_unix, workload, size, kind, fingerprint, baseline_spec,
                 target_spec, baseline_device, target_device, baseline_device_type,
                 baseline_device_string, target_device_type, target_device_string,
                 passed, exit_code, speed_ratio, speed_low, speed_high, speed_verdict,
                 verdict (JSON)
    bundles      id, path, comparison_id -> comparisons, role, run (r00, reseeded, ...),
                 status, reason, side_spec, device_type, device_string, device_name,
                 workload, size, kind, fingerprint, parity_version, torch_version,
                 hostname, node, started_unix, finished_unix

A side is stored as its spec (as it writes) and its typed parts, the device type
(``cuda``) and the string ``torch.device`` takes (``cuda:1``), written from the typed
``SideSpec``: the filters compare columns and never parse a spec back.
    metrics      bundle_id -> bundles, name, value      (see ``store.figures``)
    serving      id, path, time_unix, model, baseline_url, target_url, fingerprint,
                 outcome, exit_code, quality_rate, baseline_rate, target_rate, ratio,
                 verdict (JSON)                          (``parity serve`` comparisons)
    parity_meta  key, value                              (schema_version)

A path is a local directory or a bundle URL (``s3://bucket/prefix/run``).

Migrations: version 1 (SQLite only, parity 0.2) had no ``parity_meta`` and no
``bundles.node``; version 2 no ``serving``; version 3 no typed side columns (the
migration parses each stored spec once to fill them); ``migrate`` adds what is missing and
keeps every row. Creating or migrating holds a lock (PostgreSQL: an
advisory lock; SQLite: a transaction begun IMMEDIATE), so writers that start at once agree.
"""

from __future__ import annotations

import hashlib
from contextlib import suppress

from sqlalchemy import (
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    inspect,
    select,
    text,
)

from parity.errors import SpecError, UsageError
from parity.model.spec import parse_side

SCHEMA_VERSION = 4
#: an arbitrary key for PostgreSQL's advisory lock around creating and migrating
_LOCK_KEY = 0x70617269

metadata = MetaData()

#: the typed side columns schema version 4 added, by table: the spec column each is parsed
#: from in the migration, and the ``SideSpec`` attribute it holds
TYPED_SIDE_COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "comparisons": {
        "baseline_device_type": ("baseline_spec", "device"),
        "baseline_device_string": ("baseline_spec", "device_string"),
        "target_device_type": ("target_spec", "device"),
        "target_device_string": ("target_spec", "device_string"),
    },
    "bundles": {"device_string": ("side_spec", "device_string")},
}

comparisons = Table(
    "comparisons",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("path", Text, nullable=False, unique=True),
    Column("time_unix", Float, nullable=False),
    Column("indexed_unix", Float, nullable=False),
    *(Column(n, Text) for n in ("workload", "size", "kind", "fingerprint")),
    *(Column(n, Text) for n in ("baseline_spec", "target_spec")),
    *(Column(n, Text) for n in ("baseline_device", "target_device")),
    *(Column(n, Text) for n in TYPED_SIDE_COLUMNS["comparisons"]),
    Column("passed", Integer),
    Column("exit_code", Integer),
    *(Column(n, Float) for n in ("speed_ratio", "speed_low", "speed_high")),
    Column("speed_verdict", Text),
    Column("verdict", Text, nullable=False),
    Index("comparisons_workload", "workload", "time_unix"),
)

bundles = Table(
    "bundles",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("path", Text, nullable=False, unique=True),
    Column("comparison_id", String(32), ForeignKey("comparisons.id", ondelete="CASCADE")),
    Column("role", Text),
    Column("run", Text),
    Column("status", Text, nullable=False),
    Column("reason", Text),
    *(Column(n, Text) for n in ("side_spec", "device_type", "device_name")),
    *(Column(n, Text) for n in TYPED_SIDE_COLUMNS["bundles"]),
    *(Column(n, Text) for n in ("workload", "size", "kind", "fingerprint")),
    *(Column(n, Text) for n in ("parity_version", "torch_version", "hostname", "node")),
    *(Column(n, Float) for n in ("started_unix", "finished_unix")),
    Column("indexed_unix", Float, nullable=False),
    Index("bundles_comparison", "comparison_id"),
    Index("bundles_workload", "workload", "started_unix"),
)

metrics = Table(
    "metrics",
    metadata,
    Column(
        "bundle_id",
        String(32),
        ForeignKey("bundles.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("name", String(200), primary_key=True),
    Column("value", Float, nullable=False),
    Index("metrics_name", "name"),
)

serving = Table(
    "serving",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("path", Text, nullable=False, unique=True),
    Column("time_unix", Float, nullable=False),
    Column("indexed_unix", Float, nullable=False),
    *(Column(n, Text) for n in ("model", "baseline_url", "target_url", "fingerprint")),
    Column("outcome", Text, nullable=False),
    Column("exit_code", Integer),
    *(Column(n, Float) for n in ("quality_rate", "baseline_rate", "target_rate", "ratio")),
    Column("verdict", Text, nullable=False),
    Index("serving_model", "model", "time_unix"),
)

meta = Table(
    "parity_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)


def content_id(prefix: str, data: bytes) -> str:
    return prefix + hashlib.sha256(data).hexdigest()[:12]


def _version(conn: Connection, tables: set[str]) -> int:
    if "parity_meta" in tables:
        row = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).first()
        return int(row[0]) if row else 0
    if conn.dialect.name == "sqlite":
        return int(conn.exec_driver_sql("PRAGMA user_version").scalar() or 0)
    return 0


def _lock(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
    # SQLite: every transaction begins IMMEDIATE (``store.engine``), the write lock held


def migrate(conn: Connection, where: str) -> None:
    """Bring the index at ``where`` (shown in errors) to ``SCHEMA_VERSION``, inside the
    caller's transaction; refuse a newer index or a database that is something else."""
    _lock(conn)
    tables = set(inspect(conn).get_table_names())
    version = _version(conn, tables)
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"the index {where} has schema version {version}, newer than this parity knows "
            f"({SCHEMA_VERSION}): upgrade parity or choose another --store"
        )
    if version == 0 and tables - {"parity_meta"}:
        raise UsageError(f"{where} is a database but not a parity index: choose another --store")
    if version == 1:  # parity 0.2's SQLite index
        conn.exec_driver_sql("ALTER TABLE bundles ADD COLUMN node TEXT")
    if 1 <= version < 4:
        _add_side_columns(conn)
    metadata.create_all(conn, checkfirst=True)
    conn.execute(meta.delete().where(meta.c.key == "schema_version"))
    conn.execute(meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _add_side_columns(conn: Connection) -> None:
    """Version 4's typed side columns, filled by parsing each stored spec once (one that no
    longer parses keeps them empty: the filters then match it by its spec and device name)."""
    for name, columns in TYPED_SIDE_COLUMNS.items():
        table = metadata.tables[name]
        present = {c["name"] for c in inspect(conn).get_columns(name)}
        for column in columns.keys() - present:
            conn.exec_driver_sql(f"ALTER TABLE {name} ADD COLUMN {column} TEXT")
        specs = sorted({spec for spec, _ in columns.values()})
        for row in conn.execute(select(table.c.id, *(table.c[s] for s in specs))).mappings():
            values: dict[str, str] = {}
            for column, (spec, attribute) in columns.items():
                with suppress(SpecError):
                    if row[spec]:
                        values[column] = getattr(parse_side(row[spec]), attribute)
            if values:
                conn.execute(table.update().where(table.c.id == row["id"]).values(**values))
