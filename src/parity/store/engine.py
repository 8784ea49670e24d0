"""Where the index lives and how to reach it: an SQLite file (the embedded default) or a
database URL for a team (``postgresql://USER[:PASSWORD]@HOST[:PORT]/DB``, also
``sqlite:///PATH``), through SQLAlchemy Core.

``--store``, else ``$PARITY_STORE``, else ``$XDG_DATA_HOME/parity/index.sqlite``
(``~/.local/share/parity/index.sqlite``). A PostgreSQL password comes from the URL, or
from libpq's usual places (``PGPASSWORD``, ``~/.pgpass``, ``PGSERVICE``); it is masked
(``***``) in every line parity prints and never written anywhere.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.pool import NullPool

from parity.errors import UsageError
from parity.safety.redact import redact
from parity.safety.urls import database

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: seconds to wait for a database server before calling it unreachable
CONNECT_TIMEOUT_S = 5
#: seconds an SQLite writer waits for another's lock
SQLITE_TIMEOUT_S = 30


@dataclass(frozen=True)
class Location:
    """An index: the URL SQLAlchemy connects to, how it is shown (password masked), and
    the file when it is a local SQLite database."""

    url: URL
    shown: str
    file: Path | None

    @property
    def dialect(self) -> str:
        return self.url.get_backend_name()


def default_path() -> Path:
    """``$PARITY_STORE`` when it is a path, else the user's data directory."""
    env = os.environ.get("PARITY_STORE")
    if env and not _SCHEME.match(env):
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "parity" / "index.sqlite"


def mask(text: str, url: URL | None = None) -> str:
    """``text`` with any password (of ``url``, or in any URL in it) masked."""
    if url is not None and url.password:
        text = text.replace(str(url.password), "***")
    return redact(text)  # knows the URL's secret query values (``database`` told it)


def locate(target: str | Path | None = None) -> Location:
    """The index that ``--store`` (or ``$PARITY_STORE``, or the default) names."""
    raw = str(target) if target is not None else os.environ.get("PARITY_STORE") or ""
    if not raw:
        path = default_path()
        return Location(URL.create("sqlite", database=str(path)), str(path), path)
    if not _SCHEME.match(raw):
        path = Path(raw).expanduser()
        return Location(URL.create("sqlite", database=str(path)), str(path), path)
    shown = database(raw)
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError):
        raise UsageError(
            f"--store {shown} is not a database URL: use a file path, sqlite:///PATH or "
            "postgresql://USER@HOST/DB"
        ) from None
    backend = url.get_backend_name()
    if backend == "sqlite" and url.database:
        path = Path(url.database).expanduser()
        return Location(url.set(database=str(path)), str(path), path)
    if backend == "postgresql" and url.database:
        if url.drivername == "postgresql":
            url = url.set(drivername="postgresql+psycopg")
        return Location(url, shown, None)
    raise UsageError(
        f"--store {shown}: parity keeps its index in SQLite or PostgreSQL: use a file path, "
        "sqlite:///PATH or postgresql://USER@HOST/DB"
    )


def _sqlite_engine(loc: Location) -> Engine:
    engine = create_engine(loc.url, poolclass=NullPool, connect_args={"timeout": SQLITE_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _connect(dbapi: Any, _record: Any) -> None:
        dbapi.isolation_level = None  # SQLAlchemy begins, below; DDL stays transactional
        dbapi.execute("PRAGMA foreign_keys = ON")

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # writers queue instead of failing

    return engine


def connect(loc: Location) -> Engine:
    """An engine for ``loc``, its server reached once (UsageError naming the fix if not)."""
    if loc.dialect == "sqlite":
        return _sqlite_engine(loc)
    try:
        engine = create_engine(
            loc.url,
            poolclass=NullPool,
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "parity"},
        )
        engine.connect().close()
    except (ModuleNotFoundError, NoSuchModuleError) as exc:
        raise UsageError(
            f"the index {loc.shown} needs a PostgreSQL driver: pip install 'parity[cluster]'"
        ) from exc
    except DBAPIError as exc:
        reason = str(exc.orig or exc).strip().splitlines()
        raise UsageError(
            f"cannot reach the index {loc.shown} ({mask(reason[-1] if reason else '', loc.url)})"
            ": check the host, port, user and password (in the URL, PGPASSWORD or ~/.pgpass), "
            "or choose another --store"
        ) from None
    return engine


def check_server(environ: dict[str, str] | None = None) -> None:
    """``check_reachable`` for the index ``$PARITY_STORE`` names, where that is a database
    server (no SQLAlchemy import otherwise)."""
    raw = (os.environ if environ is None else environ).get("PARITY_STORE") or ""
    if _SCHEME.match(raw) and not raw.lower().startswith("sqlite"):
        check_reachable(raw)


def check_reachable(target: str | Path | None = None) -> None:
    """Before a run: a database server the index names (``--store``, ``$PARITY_STORE``)
    answers and takes the credentials, else UsageError (a SQLite file is made where it
    is written, and checked then)."""
    loc = locate(target)
    if loc.dialect != "sqlite":
        connect(loc).dispose()
