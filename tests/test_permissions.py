"""Permissions are bad input, not bugs: a bundle directory, a ``metrics.json`` or a
verdict this user may not read is one line naming it with exit code 2, and a read-only
index is called read-only, never corrupt. Run as an unprivileged user (root reads
everything), so these need root to switch to one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.runs import synthetic_run

NOBODY = 65534
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run parity as an unprivileged user",
)


def _as_nobody(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "PARITY_STORE": str(home / "index.sqlite")}
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-m", "parity", *args],
        capture_output=True, text=True, env=env, timeout=300, cwd=home,
    )  # fmt: skip


@pytest.fixture
def owned() -> Iterator[Path]:
    """A comparison and a home owned by the unprivileged user, in a directory it can
    reach (pytest's own temporary directories are root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="parity-test-perm-"))
    try:
        root.chmod(0o755)
        synthetic_run(root / "run")
        (root / "home").mkdir()
        for path in (root, *root.rglob("*")):
            os.chown(path, NOBODY, NOBODY)
        yield root
    finally:
        for path in (root, *root.rglob("*")):
            path.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(
    ("denied", "args", "named"),
    [
        ("run/target", ("diff", "run/baseline", "run/target"), "run/target"),
        ("run/target/r00/metrics.json", ("diff", "run/baseline", "run/target"), "metrics.json"),
        ("run/verdict.json", ("report", "run", "--md", "-"), "verdict.json"),
    ],
)
@pytest.mark.slow  # starts an interpreter
def test_an_unreadable_bundle_is_one_line_naming_it(
    owned: Path, denied: str, args: tuple[str, ...], named: str
) -> None:
    (owned / denied).chmod(0)
    res = _as_nobody(
        owned / "home", *(str(owned / a) if "/" in a or a == "run" else a for a in args)
    )
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "permission denied" in lines[0], res.stderr
    assert named in lines[0] and "a bug" not in lines[0]


@pytest.mark.slow  # starts an interpreter
def test_a_read_only_index_is_not_called_corrupt(owned: Path) -> None:
    home = owned / "home"
    made = _as_nobody(home, "reindex", str(owned / "run"))
    assert made.returncode == 0, made.stderr
    (home / "index.sqlite").chmod(0o444)
    home.chmod(0o555)
    try:
        res = _as_nobody(home, "reindex", str(owned / "run"))
    finally:
        home.chmod(0o755)
    assert res.returncode == 2
    assert "read-only" in res.stderr and "corrupt" not in res.stderr.replace("not corrupt", "")
    assert "delete" not in res.stderr
