"""Bundles at fsspec URLs, on moto's real S3 server (started by the test): published
trees visible only once committed, every file checked on every read, ``parity diff``,
``report`` and ``reindex`` reading URLs, a missing bucket refused before anything runs,
and a real ``parity compare --out s3://...`` judged again from the bucket."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from parity import storage
from parity.api import diff
from parity.errors import BundleError, UsageError
from parity.model.codec import encode
from parity.store import Store
from tests.conftest import run_cli
from tests.fixtures.runs import synthetic_run
from tests.fixtures.servers import S3

#: bad input is refused without hanging: generous, for a busy machine (the issue's 15 s
#: figures are measured idle by the commands in the closing notes, not in tests)
REFUSED_WITHIN_S = 60

pytestmark = pytest.mark.slow
BUCKET = "parity-test"


@pytest.fixture(scope="module")
def bucket(s3_server: S3) -> str:
    fs, _ = storage.split(f"s3://{BUCKET}")
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return f"s3://{BUCKET}"


@pytest.fixture(scope="module")
def published(bucket: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    local = synthetic_run(tmp_path_factory.mktemp("pub") / "run", target_scale=0.7)
    url = f"{bucket}/synthetic/run"
    storage.check_destination(url)
    storage.publish(local, url)
    return local, url


def _gates_and_speed(verdict: dict[str, object]) -> tuple[object, ...]:
    speed = verdict["speed"]
    assert isinstance(speed, dict)
    return (verdict["passed"], verdict["exit_code"], verdict["gates"], speed["verdict"],
            speed["ratio"], speed["interval"])  # fmt: skip


def test_diff_from_urls_is_the_local_verdict(published: tuple[Path, str]) -> None:
    local, url = published
    here = encode(diff(local / "baseline", local / "target"))
    there = encode(diff(f"{url}/baseline", f"{url}/target"))
    for role in ("baseline", "target"):  # each side named where it was read from
        assert there["sides"][role].pop("bundle") == f"{url}/{role}"
        assert here["sides"][role].pop("bundle") == str(local / role)
    assert there == here
    cli = run_cli("diff", f"{url}/baseline", f"{url}/target", "--json")
    assert cli.returncode in (0, 1), cli.stderr
    assert _gates_and_speed(json.loads(cli.stdout)) == _gates_and_speed(here)


def test_an_uncommitted_tree_is_invisible(bucket: str, published: tuple[Path, str]) -> None:
    local, _ = published
    fs, root = storage.split(f"{bucket}/half/run")
    for file in sorted(local.rglob("*.json"))[:5]:  # an upload that never finished
        fs.pipe_file(f"{root}/{file.relative_to(local).as_posix()}", file.read_bytes())
    with pytest.raises(BundleError, match="no committed parity run"):
        storage.fetch(f"{bucket}/half/run/baseline")
    assert not storage.exists(f"{bucket}/half/run")
    assert storage.committed(f"{bucket}/half") == []


def test_every_read_checks_every_file(bucket: str, published: tuple[Path, str]) -> None:
    local, _ = published
    url = f"{bucket}/tampered/run"
    storage.publish(local, url)
    fs, root = storage.split(url)
    name = next(p for p in fs.find(f"{root}/target") if p.endswith("metrics.json"))
    fs.pipe_file(name, fs.cat_file(name).replace(b"0", b"1", 1))
    with pytest.raises(BundleError, match="sha256 does not match"):
        storage.fetch(f"{url}/target")
    storage.publish(local, f"{bucket}/extra/run")
    fs.pipe_file(f"{root.replace('tampered', 'extra')}/target/r00/evil.pkl", b"x")
    with pytest.raises(BundleError, match="added after the run was committed"):
        storage.fetch(f"{bucket}/extra/run")


def test_reindex_and_report_from_a_url_prefix(
    published: tuple[Path, str], bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = published
    monkeypatch.chdir(tmp_path)  # a reindex with no dirs reads ./parity-runs too: none here
    with Store.open(tmp_path / "i.sqlite") as s:
        result = s.reindex([f"{bucket}/synthetic"])
        assert result.problems == [] and result.comparisons == 1
        (row,) = s.runs()
        assert row.path == url and all(b.path.startswith(url + "/") for b in s.show(row.id).bundles)
        again = s.reindex([])  # the URLs the index knows, none vanished
        assert (again.comparisons, again.removed) == (1, 0)
    made = run_cli("report", url, "--md", "-")
    assert made.returncode == 0 and "cpu+bf16" in made.stdout, made.stderr
    html = run_cli("report", url)
    assert html.returncode == 0 and (tmp_path / "run-report.html").is_file(), html.stderr


def test_a_missing_bucket_is_refused_before_anything_runs(s3_server: S3) -> None:
    with pytest.raises(UsageError, match="bucket 'no-such-bucket' does not exist"):
        storage.check_destination("s3://no-such-bucket/x")
    start = time.monotonic()
    cli = run_cli("compare", "mlp-train", "--target", "cpu+bf16", "--out", "s3://no-such-bucket/r")
    assert cli.returncode == 2 and time.monotonic() - start < REFUSED_WITHIN_S
    assert len(cli.stderr.strip().splitlines()) == 1 and "no-such-bucket" in cli.stderr
    assert s3_server.env()["AWS_SECRET_ACCESS_KEY"] not in cli.stderr + cli.stdout


def test_compare_to_s3_then_diff_from_s3(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/run1"
    cmp = run_cli(
        "compare", "mlp-train", "--target", "cpu+bf16", "--repeats", "1", "--no-compliance",
        "--steps", "6", "--json", "--out", url,
    )  # fmt: skip
    assert cmp.returncode in (0, 1) and cmp.stdout.startswith("{"), cmp.stderr[-3000:]
    verdict = json.loads(cmp.stdout)
    again = run_cli("diff", f"{url}/baseline", f"{url}/target", "--json")
    assert again.returncode == cmp.returncode, again.stderr
    assert _gates_and_speed(json.loads(again.stdout)) == _gates_and_speed(verdict)
    local = storage.fetch(url)
    for secret in (storage.split(url)[0].key or "", "testing-secret-key-0815"):
        if secret:
            assert not any(secret in p.read_text(errors="ignore") for p in local.rglob("*.json"))
    shutil.rmtree(local, ignore_errors=True)


def test_a_prefix_with_leftover_objects_is_refused_as_out(bucket: str) -> None:
    fs, path = storage.split(f"{bucket}/leftover")
    fs.pipe_file(f"{path}/baseline/r00/stdout.log", b"half a run")
    start = time.monotonic()
    cli = run_cli("compare", "mlp-train", "--target", "cpu+bf16", "--out", f"{bucket}/leftover")
    assert cli.returncode == 2 and time.monotonic() - start < REFUSED_WITHIN_S, cli.stderr
    line = cli.stderr.strip()
    assert len(line.splitlines()) == 1 and "already holds 1 object" in line and "--resume" in line


def test_resume_at_the_url_after_the_driver_is_killed_reruns_only_the_rest(
    bucket: str, tmp_path: Path
) -> None:
    """The bundles a killed comparison had uploaded are kept (the same bytes), the rest
    run, the result is committed at the URL, and the index names the URL, never a local
    copy."""
    import os
    import signal
    import subprocess
    import sys

    url = f"{bucket}/resumed"
    fs, path = storage.split(url)
    store = tmp_path / "index.sqlite"
    env = {**os.environ, "PARITY_STORE": str(store)}
    args = ("--target", "cpu+bf16", "--repeats", "3", "--no-compliance", "--steps", "30")
    proc = subprocess.Popen(
        [sys.executable, "-m", "parity", "compare", "mlp-train", *args, "--out", url,
         "--no-report"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    )  # fmt: skip
    first = f"{path}/target/r00/digest.json"
    try:
        deadline = time.monotonic() + 400
        while not fs.exists(first):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
            fs.invalidate_cache(path)
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    before = fs.cat_file(first)
    assert not fs.exists(f"{path}/{storage.COMMIT}")
    again = subprocess.run(
        [sys.executable, "-m", "parity", "compare", "--resume", url, "--json"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert again.returncode in (0, 1), again.stderr[-3000:]
    verdict = json.loads(again.stdout)
    assert verdict["sides"]["target"]["bundle"] == f"{url}/target"
    fs.invalidate_cache(path)
    assert fs.exists(f"{path}/{storage.COMMIT}") and fs.cat_file(first) == before  # kept
    local = storage.fetch(url)  # committed: every file checks against the marker
    assert len(list((local / "target").glob("r0*"))) >= 2
    with Store.open(store) as s:
        where = [str(row) for row in s.engine.connect().exec_driver_sql("SELECT * FROM bundles")]
    assert where and all(url in row for row in where), where
    assert not any("/tmp/" in row for row in where), where


SWEEP = """
[sweep]
workloads = ["mlp-train"]
pairs = [["cpu", "cpu+bf16"]]
steps = 30
out = "{out}"

[measure]
repeats = 3
compliance = false
"""


def test_a_sweep_at_a_url_resumes_its_half_done_cell_and_writes_its_summary_there(
    bucket: str, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys

    from parity.api.sweep import load_sweep

    url = f"{bucket}/sweep1"
    plan = tmp_path / "sweep.toml"
    plan.write_text(SWEEP.format(out=url))
    (cell,) = load_sweep(plan).cells
    fs, path = storage.split(cell.out)
    first = f"{path}/target/r00/digest.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "parity", "sweep", str(plan)], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 400
        while not fs.exists(first):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
            fs.invalidate_cache(path)
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    before = fs.cat_file(first)
    again = subprocess.run(
        [sys.executable, "-m", "parity", "sweep", str(plan), "--resume"], cwd=tmp_path,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert again.returncode in (0, 1), again.stderr[-3000:]
    fs.invalidate_cache(path)
    assert fs.cat_file(first) == before  # the half-done cell resumed, its bundle kept
    assert storage.exists(cell.out)  # committed
    summary = fs.cat_file(f"{storage.split(url)[1]}/summary.md").decode()
    assert cell.name in summary
    assert not list(tmp_path.glob("summary.*"))  # not in the working directory
