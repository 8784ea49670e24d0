"""A user's workload file on a cluster node that does not share this machine's files.

``path/to/my_model.py:MyWorkload`` is imported with its own directory on ``sys.path``
(``parity.plugins.import_file``), so it may import its siblings. The driver sends the
file's Python sources with the side's jobs: every ``*.py`` beside it and every package
beside it (a directory with an ``__init__.py``, its ``*.py`` at any depth; hidden ones and
``__pycache__`` left out), at most ``MAX_BYTES`` in all. The node writes them once into a
private directory named after their digest (``node.materialise``), and the worker imports
the file from there under the workload's own name: the spec, and so the fingerprint and
the verdict, are the ones a local run gives. Other files beside it (data, weights) do not
travel: a workload reads those when it is frozen, on the driver, and the frozen bytes
travel instead.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from parity.errors import WorkloadError
from parity.model.spec import WorkloadSpec
from parity.plugins import is_file_workload

#: the most Python source a workload file's directory may send with its jobs
MAX_BYTES = 16 * 1024 * 1024
#: a workload file's directory as it travels: its Python sources by relative path
Sources = dict[str, bytes]


def digest(files: Sources) -> str:
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()


def _skipped(path: Path) -> bool:
    return path.name.startswith(".") or path.name == "__pycache__" or path.is_symlink()


def _package(folder: Path, home: Path, found: dict[str, bytes]) -> None:
    for item in sorted(folder.iterdir()):
        if _skipped(item):
            continue
        if item.is_dir() and (item / "__init__.py").is_file():
            _package(item, home, found)
        elif item.is_file() and item.suffix == ".py":
            found[item.relative_to(home).as_posix()] = item.read_bytes()


def user_code(spec: WorkloadSpec) -> Sources | None:
    """The sources a workload file's jobs carry (None for any other workload)."""
    if not is_file_workload(spec.name):
        return None
    file = Path(spec.name.rpartition(":")[0]).expanduser().resolve()
    home = file.parent
    found: dict[str, bytes] = {}
    try:
        _package(home, home, found)
        found[file.name] = file.read_bytes()
    except OSError as exc:
        raise WorkloadError(
            f"workload file {file}: cannot read its directory to send it to the cluster "
            f"({exc.strerror or exc}): check its permissions"
        ) from None
    size = sum(len(b) for b in found.values())
    if size > MAX_BYTES:
        raise WorkloadError(
            f"workload file {file}: its directory holds {size / 2**20:.1f} MiB of Python, "
            f"more than the {MAX_BYTES // 2**20} MiB sent to a cluster node: move the "
            "workload file into a directory of its own"
        )
    return found
