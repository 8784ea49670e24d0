"""The index on a real PostgreSQL 15 server the test starts: the same schema, answers and
commands as SQLite, writers on many processes at once losing nothing, a v1 SQLite index
migrated, and a wrong password refused in one line that never shows it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select, text

from parity.store import SCHEMA_VERSION, Store
from parity.store.schema import TYPED_SIDE_COLUMNS, meta
from tests.fixtures.runs import synthetic_run
from tests.fixtures.servers import PG_BIN, PG_PASSWORD, PG_USER, Postgres
from tests.fixtures.serving import serving_run

#: bad input is refused without hanging: generous, for a busy machine (the issue's 15 s
#: figures are measured idle by the commands in the closing notes, not in tests)
REFUSED_WITHIN_S = 60

pytestmark = pytest.mark.slow
DAY = 86400.0


def _parity(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "parity", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("four")
    t0 = time.time() - 5 * DAY
    return [
        synthetic_run(root / f"c{i}", finished=t0 + i * DAY, target_scale=0.8 + 0.1 * i)
        for i in range(4)
    ]


def test_four_writers_at_once_lose_nothing_and_ls_lists_all(
    postgres: Postgres,
    four: list[Path],
) -> None:
    url = postgres.url(password=None)  # the password from libpq's usual place
    env = {"PARITY_STORE": url, "PGPASSWORD": PG_PASSWORD}
    procs = [_parity("reindex", str(d), env=env) for d in four]  # started at once
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [o[1] for o in outs]
    for _ in range(2):  # twice in a row
        listed = _parity("ls", "--json", env=env)
        out, err = listed.communicate(timeout=60)
        assert listed.returncode == 0, err
        rows = json.loads(out)
        assert sorted(r["path"] for r in rows) == sorted(str(d.resolve()) for d in four)
        assert all(r["type"] == "compare" for r in rows)
    with Store.open(postgres.url()) as s:
        assert s.location.dialect == "postgresql" and PG_PASSWORD not in s.path
        indexed = sum(len(s.show(r.id).bundles) for r in s.runs())
    written = sum(1 for d in four for _ in d.glob("*/*/manifest.json"))
    assert indexed == written > 4  # every bundle of every comparison


def test_same_answers_as_sqlite(
    postgres: Postgres, four: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a bare reindex also reads ./parity-runs: keep it empty (a checkout's own runs there
    # were indexed twice a store, 40 s of this test, and its answers depended on them)
    monkeypatch.chdir(tmp_path)
    answers = []
    for target in (str(tmp_path / "i.sqlite"), postgres.url()):
        with Store.open(target) as s:
            result = s.reindex(four)
            assert result.problems == [] and result.comparisons == 4
            runs = s.runs()
            record = s.show(runs[0].id[:6])
            trend = s.trend("median_step_s", side="target")
            ratio = s.trend("speed_ratio")
            again = s.reindex([])  # the directories the index knows
            answers.append((runs, record, trend, ratio, again.comparisons, again.bundles))
    lite, pg = answers
    assert lite == pg


def test_a_v1_sqlite_index_is_migrated(tmp_path: Path, four: list[Path]) -> None:
    old = tmp_path / "v1.sqlite"
    with Store.open(old) as s:
        s.reindex(four[:1])
    with sqlite3.connect(old) as conn:  # back to what parity 0.2 wrote
        conn.execute("DROP TABLE parity_meta")
        conn.execute("ALTER TABLE bundles DROP COLUMN node")
        for table, columns in TYPED_SIDE_COLUMNS.items():
            for column in columns:
                conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute("PRAGMA user_version = 1")
    with Store.open(old) as s:
        assert len(s.runs()) == 1
    with sqlite3.connect(old) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        columns = {r[1] for r in conn.execute("PRAGMA table_info(bundles)")}
        assert "node" in columns
        meta = conn.execute("SELECT value FROM parity_meta WHERE key = 'schema_version'")
        assert meta.fetchone()[0] == str(SCHEMA_VERSION)


def test_a_v2_postgres_index_is_migrated_keeping_its_runs(
    postgres: Postgres, four: list[Path], tmp_path: Path
) -> None:
    """A database of its own (the session's is shared by the other tests' answers)."""
    env = {**os.environ, "PGPASSWORD": PG_PASSWORD}
    subprocess.run(
        [str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(postgres.port), "-U", PG_USER,
         "v2"], check=True, capture_output=True, timeout=60, env=env,
    )  # fmt: skip
    url = replace(postgres, database="v2").url()
    with Store.open(url) as s:
        s.reindex(four[:2])
        before = s.runs()
        on_cpu = s.runs(device="cpu")
        with s.engine.begin() as conn:  # back to what schema version 2 wrote
            conn.execute(text("DROP TABLE serving"))
            for table, columns in TYPED_SIDE_COLUMNS.items():
                for column in columns:
                    conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
            conn.execute(text("UPDATE parity_meta SET value = '2' WHERE key = 'schema_version'"))
    with Store.open(url) as s:
        assert s.runs() == before
        assert s.runs(device="cpu") == on_cpu != []  # the typed sides filled from the specs
        s.index_path(serving_run(tmp_path / "serve"))
        assert [r.type for r in s.runs()].count("serve") == 1
        version = s.read(select(meta.c.value).where(meta.c.key == "schema_version"))
        assert version[0]["value"] == str(SCHEMA_VERSION) == "4"


def test_wrong_password_is_one_line_exit_2_and_masked(postgres: Postgres) -> None:
    wrong = "not-the-Pw-8812"
    start = time.monotonic()
    proc = _parity("ls", "--store", postgres.url(password=wrong))
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "password authentication failed" in err and "***" in err
    assert wrong not in err and took < REFUSED_WITHIN_S
    nobody = _parity("ls", "--store", f"postgresql://u:{wrong}@127.0.0.1:1/x")
    out, err = nobody.communicate(timeout=60)
    assert nobody.returncode == 2 and len(err.strip().splitlines()) == 1 and wrong not in err
    assert "cannot reach the index" in err


def test_a_compare_with_a_wrong_index_password_is_refused_before_it_runs(
    postgres: Postgres, tmp_path: Path
) -> None:
    """Not a comparison run to the end and a warning at exit 0: one line, exit 2, within
    seconds, and nothing written."""
    wrong = "not-the-Pw-8812"
    start = time.monotonic()
    proc = _parity(
        "compare", "mlp-train", "--target", "cpu+bf16", "--out", str(tmp_path / "never"),
        env={"PARITY_STORE": postgres.url(password=wrong)},
    )  # fmt: skip
    out, err = proc.communicate(timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and "password authentication failed" in err
    assert wrong not in err and took < REFUSED_WITHIN_S
    assert not (tmp_path / "never").exists()


def test_four_compares_at_once_index_every_row_exactly_once(
    postgres: Postgres, tmp_path: Path
) -> None:
    """Four real ``parity compare`` processes started together, each indexing its verdict
    and bundles into one PostgreSQL index as it ends: every comparison, bundle and figure
    is there once (none lost, none twice), and ``ls`` lists the four."""
    from sqlalchemy import select

    from parity.bundle import load_bundle
    from parity.store.figures import bundle_metrics
    from parity.store.schema import bundles, comparisons, metrics

    env = {"PARITY_STORE": postgres.url(password=None), "PGPASSWORD": PG_PASSWORD}
    outs = [tmp_path / f"cmp{i}" for i in range(4)]
    procs = [
        _parity("compare", "mlp-train", "--target", "cpu+bf16", "--steps", "4",
                "--repeats", "2", "--no-compliance", "--no-report", "--out", str(out), "--json",
                env=env)
        for out in outs
    ]  # fmt: skip
    done = [p.communicate(timeout=900) for p in procs]
    assert all(p.returncode in (0, 1) for p in procs), [err[-2000:] for _, err in done]
    assert not [err for _, err in done if "history index" in err]  # no write given up
    mine = {str(o.resolve()) for o in outs}
    on_disk = {m.parent.resolve() for o in outs for m in o.glob("*/*/manifest.json")}
    with Store.open(postgres.url()) as s:
        paths = [r["path"] for r in s.read(select(comparisons.c.path))]
        assert sorted(p for p in paths if p in mine) == sorted(mine)  # each once
        rows = s.read(
            select(bundles.c.id, bundles.c.path, bundles.c.comparison_id).where(
                bundles.c.path.in_(sorted(str(p) for p in on_disk))
            )
        )
        assert sorted(r["path"] for r in rows) == sorted(str(p) for p in on_disk)
        assert all(r["comparison_id"] is not None for r in rows)
        for r in rows:  # each bundle's figures, all of them, each once
            names = s.read(select(metrics.c.name).where(metrics.c.bundle_id == r["id"]))
            wanted = bundle_metrics(load_bundle(Path(r["path"])))
            assert sorted(n["name"] for n in names) == sorted(wanted), r["path"]
    listed = _parity("ls", "--json", env=env)
    out, err = listed.communicate(timeout=60)
    assert listed.returncode == 0, err
    assert mine <= {r["path"] for r in json.loads(out)}
