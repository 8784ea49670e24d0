"""Why a side failed, attributed to what failed (issue 53, class 9): a workload that
changes its working directory is not a full disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from parity.runner import worker
from parity.runner.failure import failure_reason

CHDIR = """
import os, tempfile
from typing import ClassVar
from parity.workloads.mlp import MlpTrain

class ChdirTrain(MlpTrain):
    name: ClassVar[str] = "chdir-train"

    def make_runner(self, model, data, ctx):
        os.chdir(tempfile.mkdtemp(prefix="workload-cwd-"))  # and never back
        return super().make_runner(model, data, ctx)
"""


@pytest.mark.slow
def test_a_workload_that_changes_its_working_directory_runs_as_any_other(
    tmp_path: Path,
) -> None:
    """Relative --out and PARITY_CACHE_DIR, a workload that moves to another directory
    while it is set up: parity's own paths are absolute in the worker, so both sides run
    (this was "the worker could not write its bundle (is the disk full?)")."""
    (tmp_path / "chdir_workload.py").write_text(CHDIR)
    env = {**os.environ, "PARITY_CACHE_DIR": "cache", "PARITY_STORE": "store/index.sqlite"}
    command = [sys.executable, "-m", "parity", "compare", "chdir_workload.py:ChdirTrain"]
    command += ["--target", "cpu+bf16", "--steps", "4", "--repeats", "1", "--no-compliance"]
    done = subprocess.run(
        [*command, "--out", "out"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "disk full" not in done.stdout + done.stderr
    assert "target failed" not in done.stdout and "baseline failed" not in done.stdout
    for side in ("baseline", "target"):
        assert (tmp_path / "out" / side / "r00" / "digest.json").is_file()
    assert (tmp_path / "cache").is_dir() and not list(tmp_path.glob("**/.r00.tmp-*"))


@pytest.mark.parametrize("moved", [True, False])
def test_a_bundle_that_cannot_be_written_names_the_cause_the_worker_saw(
    tmp_path: Path, moved: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    """The worker's last stderr line says why it could not write its error report and
    whether the workload had changed its working directory; the reason says it, and
    "is the disk full?" only where the worker said nothing."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    gone = tmp_path / "gone"  # the directory the worker could no longer write in
    here = os.getcwd()
    try:
        if moved:
            os.chdir(tmp_path)
        error = worker.write_error(gone, RuntimeError("the workload's own error"), "steps")
        assert error is not None
        worker._say_unwritable(error, here, None)
    finally:
        os.chdir(here)
    (bundle / "stderr.log").write_text("step 3\n" + capfd.readouterr().err)
    reason, unwritable = failure_reason(bundle, worker.EXIT_UNWRITABLE, False, 60.0, "steps")
    assert unwritable and reason is not None
    assert "disk full" not in reason and "(ENOENT)" in reason, reason
    if moved:
        assert reason.startswith(
            f"the workload changed the working directory (to {tmp_path}) in phase 'steps'"
        ), reason
        assert "os.chdir back" in reason
    else:
        assert reason.startswith("the worker could not write its bundle in phase 'steps': ")
    (bundle / "stderr.log").write_text("nothing said\n")
    said, _ = failure_reason(bundle, worker.EXIT_UNWRITABLE, False, 60.0, "steps")
    assert said == "the worker could not write its bundle in phase 'steps' (is the disk full?)"
