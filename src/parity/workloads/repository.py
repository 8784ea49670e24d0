"""The git state of the repository a user's script or workload file lives in.

A script (script mode) or a ``path/to/file.py:factory`` workload is the user's code: the
description records the commit it was run at and whether the work tree differed from it,
so a verdict can be traced back to a commit. ``dirty`` is true when a tracked file has
uncommitted changes or the file itself is not committed (untracked files elsewhere in the
repository do not count); None when git could not tell. Three ``git`` calls with a short
timeout each, in the parent only; no git, or a file outside a repository, records nothing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from parity.model.stack import SourceRepository

TIMEOUT_S = 5.0
#: variables that would point git at another repository than the file's
_GIT_LOCATION = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C")  # a status that takes no lock
    try:
        return subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None


def repository(path: str | Path) -> SourceRepository | None:
    """The commit and dirty flag of the repository ``path`` (a file or a directory) is
    in; None outside a repository, in one without commits, or without git."""
    where = Path(path).expanduser().resolve()
    directory = where if where.is_dir() else where.parent
    if not directory.is_dir():
        return None
    head = _git(directory, "rev-parse", "--verify", "--quiet", "HEAD")
    if head is None or head.returncode != 0 or not head.stdout.strip():
        return None
    status = _git(directory, "status", "--porcelain", "--untracked-files=no")
    dirty: bool | None = None
    if status is not None and status.returncode == 0:
        dirty = bool(status.stdout.strip())
    if dirty is False and where.is_file():
        tracked = _git(directory, "ls-files", "--error-unmatch", "--", where.name)
        dirty = None if tracked is None else tracked.returncode != 0
    return SourceRepository(commit=head.stdout.strip(), dirty=dirty)
