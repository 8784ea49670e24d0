"""The git state of a user's script or workload file: commit and dirty flag, in a real
temporary repository; nothing outside a repository or without git."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from parity.workloads.repository import repository
from parity.workloads.script import describe, parse_command

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text("print('train')\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_a_clean_repository_gives_its_commit(repo: Path) -> None:
    state = repository(repo / "src" / "train.py")
    assert state is not None and state.commit == git(repo, "rev-parse", "HEAD")
    assert state.dirty is False and str(state) == state.commit[:12]


def test_changes_and_an_uncommitted_file_make_it_dirty(repo: Path) -> None:
    (repo / "notes.txt").write_text("untracked elsewhere: not a change to the code\n")
    assert repository(repo / "src" / "train.py").dirty is False  # type: ignore[union-attr]
    (repo / "src" / "new.py").write_text("print('new')\n")
    state = repository(repo / "src" / "new.py")  # the file itself is not committed
    assert state is not None and state.dirty is True
    assert str(state).endswith("(uncommitted changes)")
    (repo / "src" / "train.py").write_text("print('changed')\n")
    assert repository(repo / "src" / "train.py").dirty is True  # type: ignore[union-attr]


def test_nothing_outside_a_repository_or_without_git(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "train.py").write_text("pass\n")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert repository(alone / "train.py") is None
    assert repository(tmp_path / "missing" / "train.py") is None
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert repository(repo / "src" / "train.py") is None


def test_script_mode_records_the_repository(repo: Path) -> None:
    cmd = parse_command(["python", str(repo / "src" / "train.py"), "--device", "{device}"])
    parts, description = describe(cmd)
    assert description.repository is not None
    assert description.repository.commit == git(repo, "rev-parse", "HEAD")
    # recorded, not fingerprinted: a new commit of the same bytes is the same workload
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    again, later = describe(cmd)
    assert again == parts and later.repository != description.repository


def test_a_workload_file_records_its_repository_when_frozen(repo: Path) -> None:
    from parity.model.spec import WorkloadSpec
    from parity.workloads import resolve
    from parity.workloads.frozen import freeze

    example = Path(__file__).parents[2] / "examples" / "tabular_train.py"
    shutil.copy(example, repo / "src" / "tabular.py")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "workload")
    spec = WorkloadSpec(name=f"{repo / 'src' / 'tabular.py'}:TabularTrain", steps=2)
    frozen = freeze(resolve(spec))
    assert frozen.description.repository is not None
    assert frozen.description.repository.commit == git(repo, "rev-parse", "HEAD")
    assert frozen.description.repository.dirty is False
    (repo / "src" / "other.py").write_text("x = 1\n")
    git(repo, "add", "src/other.py")  # staged, not committed: dirty
    again = freeze(resolve(spec))  # from the cache, with the state of now
    assert again.description.repository is not None and again.description.repository.dirty
    assert again.fingerprint == frozen.fingerprint
