"""One rule for local leftovers: every staging or fetched copy is removed on every exit
path (done, an error, SIGTERM, and after a SIGKILL by the next parity process); after a
comparison, a diff and a report of S3 sides nothing of parity's stays in ``$TMPDIR``, and
the printed report is the published one; a full ``$TMPDIR`` is one line and leaves
nothing in the bucket."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from parity import storage
from parity.errors import OutputError
from parity.safety import scratch
from tests.conftest import run_cli
from tests.fixtures.servers import S3


def test_a_scope_removes_what_was_made_inside_whatever_ends_it() -> None:
    with pytest.raises(RuntimeError), scratch.scope():
        made = scratch.make("out")
        (made / "f").write_text("x")
        raise RuntimeError
    assert not made.exists() and made not in scratch.held()


def test_an_unusable_tmpdir_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(OutputError) as info:
        scratch.make("out")
    assert "\n" not in str(info.value) and "TMPDIR" in str(info.value)


_CHILD = """
import os, sys, time
from parity.safety import scratch
print(scratch.make(sys.argv[1]), flush=True)
time.sleep(60)
"""


def _child(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, "out"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp)},
    )  # fmt: skip
    assert proc.stdout is not None
    made = Path(proc.stdout.readline().strip())
    proc.stdout.close()  # it prints nothing more
    assert made.is_dir() and made.parent == tmp
    return proc, made


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_process_leaves_nothing(signum: int, tmp_path: Path) -> None:
    proc, made = _child(tmp_path)
    proc.send_signal(signum)
    assert proc.wait(timeout=60) == -signum  # ends as the signal would have
    assert not made.exists()


@pytest.mark.slow  # starts a process
def test_a_killed_process_leaves_nothing_past_the_next_one(tmp_path: Path) -> None:
    proc, made = _child(tmp_path)
    proc.kill()
    proc.wait(timeout=60)
    assert made.is_dir()  # nothing runs on SIGKILL
    alive, mine = _child(tmp_path)  # the next parity process sweeps it
    try:
        assert not made.exists() and mine.is_dir()
    finally:
        alive.terminate()
        alive.wait(timeout=60)


def _leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("parity-"))


@pytest.mark.slow
def test_compare_diff_and_report_of_s3_sides_leave_nothing(
    s3_server: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, _ = storage.split("s3://scratch-test")
    with contextlib.suppress(FileExistsError):
        fs.mkdir("scratch-test")
    url = f"s3://scratch-test/run-{time.time_ns()}"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.chdir(tmp_path)
    env = {"TMPDIR": str(tmp)}
    res = run_cli(
        "compare", "mlp-train", "--steps", "2", "--target", "cpu+bf16", "--repeats", "2",
        "--no-compliance", "--out", url, env=env, process=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"report: {url}/report.html" in " ".join(res.stdout.split())
    assert str(tmp) not in res.stdout
    assert _leftovers(tmp) == []
    res = run_cli("diff", f"{url}/baseline", f"{url}/target", env=env, process=True)
    assert res.returncode == 0, res.stderr
    res = run_cli("report", url, env=env, process=True)
    assert res.returncode == 0, res.stderr
    assert _leftovers(tmp) == []


@contextlib.contextmanager
def _tiny_tmpfs(where: Path, free_kib: int) -> Iterator[Path]:
    """A 64 KiB tmpfs with ``free_kib`` left: tempfile's probe of it passes, a bundle
    does not fit (root only)."""
    where.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
            check=True, capture_output=True,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("a tmpfs cannot be mounted here (needs root)")
    try:
        (where / "fill").write_bytes(b"\0" * ((64 - free_kib) * 1024))
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.slow
def test_a_full_tmpdir_is_one_line_and_leaves_nothing_in_the_bucket(
    s3_server: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, _ = storage.split("s3://scratch-test")
    with contextlib.suppress(FileExistsError):
        fs.mkdir("scratch-test")
    url = f"s3://scratch-test/full-{time.time_ns()}"
    monkeypatch.chdir(tmp_path)
    with _tiny_tmpfs(tmp_path / "full", free_kib=8) as tmp:
        res = run_cli(
            "compare", "mlp-train", "--steps", "2", "--target", "cpu+bf16",
            "--out", url, env={"TMPDIR": str(tmp)}, process=True,
        )  # fmt: skip
        assert res.returncode != 0
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "full" in lines[0], res.stderr
        assert _leftovers(tmp) == []
    assert not fs.exists(url.removeprefix("s3://")) or fs.find(url) == []
