"""The worker hook that holds a job on its node until a test kills the node."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from parity.testing import hold


def _worker(monkeypatch: pytest.MonkeyPatch, directory: Path) -> SimpleNamespace:
    """A worker module as the hook sees it: its ``read_job`` wrapped by the hook."""
    monkeypatch.setenv(hold.ENV_VAR, str(directory))
    worker = SimpleNamespace(read_job=lambda tmp: SimpleNamespace(**tmp))
    hold.on_worker_start(worker)
    return worker


def test_the_armed_side_s_first_measuring_job_is_held_until_released(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    worker = _worker(monkeypatch, tmp_path)
    target = {"role": "target", "mode": "measure", "repeat": 0}
    # not armed: nothing held
    assert worker.read_job(target).role == "target"
    hold.arm(tmp_path, "target")
    # another side's job, or the target's in another mode, passes
    assert worker.read_job({**target, "role": "baseline"}).role == "baseline"
    assert worker.read_job({**target, "mode": "reference"}).mode == "reference"
    assert not (tmp_path / hold.HELD).exists()
    read: list[object] = []
    held = threading.Thread(target=lambda: read.append(worker.read_job(target)))
    held.start()
    for _ in range(300):
        if (tmp_path / hold.HELD).exists():
            break
        held.join(0.1)
    assert (tmp_path / hold.HELD).read_text().startswith("target 0 ")
    assert held.is_alive() and not read  # held
    # the job again (its rerun elsewhere) is not held: the arming was claimed
    assert worker.read_job({**target, "repeat": 0}).repeat == 0
    (tmp_path / hold.RELEASE).touch()
    held.join(30)
    assert not held.is_alive() and len(read) == 1


def test_without_the_variable_the_hook_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hold.ENV_VAR, raising=False)
    read_job = object()
    worker = SimpleNamespace(read_job=read_job)
    hold.on_worker_start(worker)
    assert worker.read_job is read_job
