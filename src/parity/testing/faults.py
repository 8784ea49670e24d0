"""Injected write faults for the tests of a full disk; never set in a normal run.

``PARITY_TEST_FAULTS=NAME[,NAME...]`` in a worker's environment makes the worker's writes
of those bundle files fail as a full disk makes them fail (``ENOSPC``): JSON documents,
safetensors files and ``error.json`` itself. ``*`` fails every write (the worker then
cannot even report its error and exits with 4). The worker installs the faults before it
reads its job (``parity.runner.worker``).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from parity.plugins import WORKER_HOOKS_VAR

ENV_VAR = "PARITY_TEST_FAULTS"


def disk_full(path: Path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def environ(spec: str) -> dict[str, str]:
    """The environment that makes a worker's writes named by ``spec`` fail."""
    return {ENV_VAR: spec, WORKER_HOOKS_VAR: __name__}


def on_worker_start(worker: Any) -> None:
    """Called by each worker before its job (``PARITY_WORKER_HOOKS``)."""
    spec = os.environ.get(ENV_VAR)
    if spec:
        install(spec, worker)


def install(spec: str, worker: Any) -> None:
    """Make the writes ``spec`` names fail in this process; ``worker`` is the running
    worker's module (``__main__`` where it was spawned, so passed in)."""
    import parity.bundle as bundle
    import parity.runner.session
    from parity.errors import OutputError
    from parity.model.job import ERROR_FILE

    session: Any = parity.runner.session  # patched below: typed loosely on purpose
    names = frozenset(n.strip() for n in spec.split(",") if n.strip())

    def hit(path: Path) -> bool:
        return "*" in names or path.name in names

    real_write_json = bundle.write_json
    real_save_file = session.save_file

    def write_json(path: Path, data: Any) -> str:
        if hit(path):
            raise OutputError(f"could not write {path}: {bundle.io_reason(disk_full(path))}")
        return real_write_json(path, data)

    def save_file(tensors: Any, filename: str, metadata: Any = None) -> None:
        if hit(Path(filename)):
            Path(filename).write_bytes(b"\0" * 64)  # cut short, as a full disk leaves it
            raise disk_full(Path(filename))
        real_save_file(tensors, filename, metadata)

    def dumps(*args: Any, **kwargs: Any) -> str:
        raise disk_full(Path(ERROR_FILE))

    bundle.write_json = write_json
    session.save_file = save_file
    if hit(Path(ERROR_FILE)):
        worker.dumps = dumps
