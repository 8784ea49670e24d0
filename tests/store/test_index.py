"""The history index: a real SQLite file, queried, deleted and rebuilt from the bundles."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
from pathlib import Path

import pytest

from parity.comparison import Comparison
from parity.errors import UsageError
from parity.store import SCHEMA_VERSION, Store, default_path, index_quietly
from parity.store.schema import TYPED_SIDE_COLUMNS
from tests.conftest import run_cli
from tests.fixtures.runs import STDERR, real_run, synthetic_run, write_bundle
from tests.fixtures.serving import serving_run


def test_index_is_a_real_versioned_sqlite_file(store_file: Path) -> None:
    with sqlite3.connect(store_file) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"comparisons", "bundles", "metrics"} <= tables
        assert conn.execute("SELECT count(*) FROM metrics").fetchone()[0] > 100


def test_reindex_after_the_database_file_was_deleted(
    store_file: Path, runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a bare reindex also reads ./parity-runs: keep it empty
    with Store.open(store_file) as s:
        before = (s.runs(), s.trend("median_step_s"), s.show(s.runs()[1].id))
    store_file.unlink()
    with Store.open(store_file) as s:
        assert s.runs() == []
        with pytest.raises(UsageError, match="nothing to reindex"):
            s.reindex([])
        s.reindex([runs])
        after = (s.runs(), s.trend("median_step_s"), s.show(s.runs()[1].id))
    # ids come from the bundles' content: the rebuilt index names every run the same
    assert before == after


def test_reindex_forgets_vanished_runs_and_reports_broken_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a bare reindex also reads ./parity-runs: keep it empty
    root = tmp_path / "runs"
    synthetic_run(root / "keep")
    synthetic_run(root / "gone")
    (root / "broken").mkdir(parents=True)
    (root / "broken" / "manifest.json").write_text("{not json")
    db = tmp_path / "i.sqlite"
    with Store.open(db) as s:
        first = s.reindex([root])
        assert first.comparisons == 2 and len(first.problems) == 1
        assert "broken" in first.problems[0]
        shutil.rmtree(root / "gone")
        second = s.reindex([])  # the directories the index knows
        assert (second.comparisons, second.bundles, second.removed) == (1, 4, 1)


def test_a_newer_or_foreign_database_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    with sqlite3.connect(newer) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(UsageError, match="newer than this parity"), Store.open(newer):
        pass
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(UsageError, match="not a parity index"), Store.open(foreign):
        pass
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(UsageError, match="not a parity index"), Store.open(garbage):
        pass


def test_indexing_failure_warns_and_never_raises(
    tmp_path: Path, runs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-directory"
    blocked.mkdir()
    with caplog.at_level(logging.WARNING, logger="parity"):
        assert index_quietly(Comparison.load(runs / "a"), store=blocked) is None
    assert "was not added to the history index" in caplog.text and "reindex" in caplog.text


def test_default_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PARITY_STORE", str(tmp_path / "x.sqlite"))
    assert default_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv("PARITY_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_path() == tmp_path / "parity" / "index.sqlite"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_path() == Path.home() / ".local" / "share" / "parity" / "index.sqlite"


def test_cli_history_commands(tmp_path: Path, runs: Path) -> None:
    from typer.testing import CliRunner

    from parity.cli.app import app

    runner = CliRunner()
    db = str(tmp_path / "cli.sqlite")
    result = runner.invoke(app, ["reindex", str(runs), "--store", db])
    assert result.exit_code == 0 and "3 comparison(s), 13 bundle(s)" in result.stdout
    listed = runner.invoke(app, ["ls", "--store", db, "--workload", "gpt-train", "--json"])
    rows = json.loads(listed.stdout)
    assert [r["type"] for r in rows] == ["compare", "compare"]
    shown = runner.invoke(app, ["show", rows[0]["id"], "--store", db, "--json"])
    assert json.loads(shown.stdout)["id"] == rows[0]["id"]
    trend = runner.invoke(app, ["trend", "median_step_s", "--store", db, "--side", "target"])
    assert trend.exit_code == 0 and "median_step_s over time" in trend.stdout
    table = runner.invoke(app, ["ls", "--store", db])
    assert table.exit_code == 0 and rows[0]["id"] in table.stdout
    bad = runner.invoke(app, ["trend", "nope", "--store", db])
    assert bad.exit_code == 2 and "unknown metric 'nope'" in bad.stderr


@pytest.mark.slow
def test_compare_indexes_and_reports_what_it_wrote(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    out = real_run(tmp_path_factory, "gpt-train")
    assert (out / "report.html").is_file()
    assert f"report: {out / 'report.html'}" in STDERR["gpt-train"]
    with Store.open() as s:  # PARITY_STORE, which the test session points at a temp file
        mine = [r for r in s.runs() if r.path == str(out.resolve())]
        assert len(mine) == 1 and mine[0].result == "PASS"
        record = s.show(mine[0].id)
        assert {b.role for b in record.bundles} == {"baseline", "target"}


def test_a_run_indexed_at_its_url_is_never_repointed_to_a_local_copy(tmp_path: Path) -> None:
    """A local copy of a published run (a staging or resumed copy) indexed again keeps the
    URL the team reads it from, for the comparison and each of its bundles."""
    run = synthetic_run(tmp_path / "copy")
    url = "s3://team-bucket/runs/run1"
    with Store.open(tmp_path / "index.sqlite") as s:
        s.index_comparison(Comparison.load(run, strict=True), url)
        s.index_path(run)  # the local copy, indexed again
        with s.engine.connect() as conn:
            paths = [r[0] for r in conn.exec_driver_sql("SELECT path FROM bundles")]
            paths += [r[0] for r in conn.exec_driver_sql("SELECT path FROM comparisons")]
    assert paths and all(p.startswith(url) for p in paths), paths
    other = synthetic_run(tmp_path / "other")
    with Store.open(tmp_path / "index2.sqlite") as s:
        s.index_path(other)
        s.index_comparison(Comparison.load(other, strict=True), url)  # published later
        with s.engine.connect() as conn:
            paths = [r[0] for r in conn.exec_driver_sql("SELECT path FROM comparisons")]
    assert paths == [url]  # a local path gives way to the URL


def test_a_serving_comparison_is_listed_shown_and_reindexed(tmp_path: Path) -> None:
    run = serving_run(tmp_path / "runs" / "serve-1", rates=(4.0, 6.0))
    index = tmp_path / "i.sqlite"
    with Store.open(index) as s:
        result = s.reindex([tmp_path / "runs"])
        assert (result.serving, result.comparisons, result.problems) == (1, 0, [])
        [row] = s.runs()
        assert row.type == "serve" and row.id.startswith("s") and row.result == "PASS"
        assert row.workload == "smol" and row.speed_ratio == pytest.approx(1.5)
        assert row.sides == "http://baseline-host:8000 -> http://target-host:8000"
        assert s.runs(workload="other") == [] and s.runs(device="cuda") == []
        record = s.show(row.id[:5])
        assert record.type == "serve" and record.exit_code == 0 and record.passed
        assert record.serving is not None and record.serving.ratio == pytest.approx(1.5)
    listed = run_cli("ls", "--store", str(index), "--wide")
    assert listed.returncode == 0 and row.id in listed.stdout and "smol:" in listed.stdout
    shown = run_cli("show", row.id, "--store", str(index))
    assert shown.returncode == 0 and "serving verdict: PASS" in shown.stdout, shown.stderr
    shutil.rmtree(run)
    with Store.open(index) as s:
        assert s.reindex([tmp_path / "runs"]).removed == 1 and s.runs() == []


def test_a_v2_index_is_migrated_keeping_its_runs(tmp_path: Path, runs: Path) -> None:
    old = tmp_path / "v2.sqlite"
    with Store.open(old) as s:
        s.reindex([runs])
        before = s.runs()
    with sqlite3.connect(old) as conn:  # back to what schema version 2 wrote
        conn.execute("DROP TABLE serving")
        _drop_typed_sides(conn)
        conn.execute("UPDATE parity_meta SET value = '2' WHERE key = 'schema_version'")
        conn.execute("PRAGMA user_version = 2")
    with Store.open(old) as s:
        assert s.runs() == before
        s.index_path(serving_run(tmp_path / "serve"))
        assert [r.type for r in s.runs()].count("serve") == 1
    with sqlite3.connect(old) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        meta = conn.execute("SELECT value FROM parity_meta WHERE key = 'schema_version'")
        assert meta.fetchone()[0] == "4"


def _drop_typed_sides(conn: sqlite3.Connection) -> None:
    """Drop the typed side columns version 4 added."""
    for table, columns in TYPED_SIDE_COLUMNS.items():
        for column in columns:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")


def test_a_v3_index_gets_typed_sides_parsed_once_and_filters_alike(
    tmp_path: Path, runs: Path
) -> None:
    """Version 4 keeps each side's device type and device string in columns of their own;
    a version-3 index is migrated by parsing its specs once, and ``ls``/``show``/``trend``
    answer as before, the device filters included."""
    root = tmp_path / "runs"
    shutil.copytree(runs, root)
    write_bundle(root / "indexed", role="run", spec="cpu:0+bf16", workload="mlp-train")
    old = tmp_path / "v3.sqlite"
    filters = ("cpu", "cpu:0", "cpu:0+bf16", "cpu+bf16", "test cpu", "cuda", "cuda:0")

    def answers(s: Store) -> tuple[object, ...]:
        shown = [s.show(r.id) for r in s.runs()]
        trends = [s.trend("median_step_s", device=d) for d in filters]
        return s.runs(), shown, [s.runs(device=d) for d in filters], trends

    with Store.open(old) as s:
        s.reindex([root])
        before = answers(s)
    assert [r.sides for r in before[2][1]] == ["cpu:0+bf16"]  # by its device string
    assert {r.type for r in before[2][0]} == {"run", "compare"}  # by its device type
    with sqlite3.connect(old) as conn:
        typed = "SELECT side_spec, device_type, device_string FROM bundles ORDER BY side_spec"
        written = conn.execute(typed).fetchall()
        assert ("cpu:0+bf16", "cpu", "cpu:0") in written
        assert ("cpu+threads=1", "cpu", "cpu") in written
        sides = "SELECT baseline_device_type, baseline_device_string, target_device_type, "
        assert set(conn.execute(sides + "target_device_string FROM comparisons")) == {
            ("cpu", "cpu", "cpu", "cpu")
        }
        _drop_typed_sides(conn)  # back to what schema version 3 wrote
        conn.execute("UPDATE parity_meta SET value = '3' WHERE key = 'schema_version'")
        conn.execute("PRAGMA user_version = 3")
    with Store.open(old) as s:
        assert answers(s) == before
    with sqlite3.connect(old) as conn:
        assert conn.execute(typed).fetchall() == written
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
