"""The zygote: forked workers that start fast, keep their own logs and sessions, report
their exit, and die with it."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from parity.runner.zygote import Zygote
from parity.testing.pace import patience
from parity.workloads.names import preload_modules

ENTRY = "tests.runner.zygote_entries"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def importable_tests() -> Iterator[None]:
    """The entry points live in ``tests``: on the zygote's path through PYTHONPATH (it
    starts without the working directory, ``parity.runner.python``)."""
    root = str(Path(__file__).resolve().parents[2])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        yield


@pytest.fixture(scope="module")
def zygote(importable_tests: None) -> Iterator[Zygote]:
    z = Zygote.start()
    yield z
    z.close()


def _job(tmp_path: Path, name: str, action: str) -> Path:
    job = tmp_path / name
    job.mkdir()
    (job / "action").write_text(action)
    return job


def _fork(z: Zygote, job: Path) -> int:
    env = {**os.environ, "ZYGOTE_MARKER": job.name}
    return z.fork(job, job / "stdout.log", job / "stderr.log", env, entry=ENTRY)


def test_a_child_starts_fast_with_torch_loaded_and_its_own_logs(
    zygote: Zygote, tmp_path: Path
) -> None:
    job = _job(tmp_path, "a", "ok")
    t0 = time.monotonic()
    pid = _fork(zygote, job)
    assert zygote.wait(pid, 60) == 0
    took = time.monotonic() - t0
    seen = (job / "seen.txt").read_text()
    assert "'torch_loaded': True" in seen and f"'sid': {pid}" in seen
    assert "'marker': 'a'" in seen and "'preloaded': False" in seen  # only what it asked
    assert "child" in (job / "stdout.log").read_text()
    assert "to stderr" in (job / "stderr.log").read_text()
    # no interpreter start, no import torch (about 4 s idle): both stretch with the load alike
    assert took < patience(2.0)


def test_a_workload_s_modules_are_preloaded_and_a_missing_one_is_left_to_the_worker(
    tmp_path: Path,
) -> None:
    z = Zygote.start(preload=("tabnanny", "no_such_module_for_parity"))
    try:
        job = _job(tmp_path, "p", "ok")
        assert z.wait(_fork(z, job), 60) == 0
        assert "'preloaded': True" in (job / "seen.txt").read_text()
    finally:
        z.close()
    assert preload_modules("hf:gpt2")[0] == "transformers"
    assert preload_modules("gpt-train") == preload_modules(f"{tmp_path}/w.py:make") == ()


def test_a_child_runs_where_its_requester_is_not_where_the_zygote_was_launched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept zygote outlives the command that launched it: a later comparison's relative
    workload file or data names its own working directory, even after the launcher's is
    gone (the suite once failed ``examples/tabular_train.py ... does not exist`` so)."""
    launched_from, caller = tmp_path / "launched_from", tmp_path / "caller"
    launched_from.mkdir()
    caller.mkdir()
    monkeypatch.chdir(launched_from)
    z = Zygote.start()
    try:
        launched_from.rmdir()
        monkeypatch.chdir(caller)
        job = _job(tmp_path, "w", "ok")
        assert z.wait(_fork(z, job), 60) == 0
        assert f"'cwd': {str(caller)!r}" in (job / "seen.txt").read_text()
    finally:
        z.close()


def test_exit_codes_and_exceptions_come_back(zygote: Zygote, tmp_path: Path) -> None:
    assert zygote.wait(_fork(zygote, _job(tmp_path, "b", "exit5")), 60) == 5
    raised = _job(tmp_path, "c", "raise")
    assert zygote.wait(_fork(zygote, raised), 60) == 71
    assert "RuntimeError: planted" in (raised / "stderr.log").read_text()


def test_a_child_killed_by_its_group_reports_the_signal(zygote: Zygote, tmp_path: Path) -> None:
    pid = _fork(zygote, _job(tmp_path, "d", "sleep"))
    assert zygote.wait(pid, 0.5) is None
    os.killpg(pid, signal.SIGKILL)
    assert zygote.wait(pid, 30) == -signal.SIGKILL


def test_children_die_with_the_zygote(tmp_path: Path) -> None:
    z = Zygote.start()
    pid = _fork(z, _job(tmp_path, "e", "sleep"))
    assert z.wait(pid, 0.5) is None
    z.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("the child outlived its zygote")


@pytest.mark.usefixtures("outside_kept_zygotes")  # a kept zygote would be taken instead
def test_a_zygote_launched_ahead_is_the_one_used_and_an_unused_one_is_reaped() -> None:
    from parity.runner.launch import Launcher
    from tests.fixtures.jobs import workload_job

    job = workload_job("mlp-train", side="cpu")
    with Launcher(fork=True) as launcher:
        launcher.warm("mlp-train")
        assert launcher.pending is not None
        ahead = launcher.pending[1]
        assert launcher.prepare(job) == "fork"
        assert launcher.zygote is not None and launcher.zygote.proc is ahead
        assert launcher.pending is None
    assert ahead.poll() == 0  # ended by its own quick exit, not killed
    with Launcher(fork=True) as launcher:
        launcher.warm("mlp-train")
        assert launcher.pending is not None
        unused = launcher.pending[1]
    assert unused.poll() is not None and launcher.pending is None
    with Launcher(fork=False) as launcher:  # spawn only: nothing launched ahead
        launcher.warm("mlp-train")
        assert launcher.pending is None


def test_the_zygote_ends_without_the_interpreter_s_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Torch's teardown took about a second at the end of every comparison."""
    marker = tmp_path / "atexit.txt"
    monkeypatch.setenv("PARITY_TEST_ATEXIT", str(marker))
    z = Zygote.start(preload=("tests.runner.zygote_atexit",))
    z.close()
    assert z.proc.returncode == 0 and not marker.exists()


HF_AFTER_PRELOAD = """
import importlib, sys
from parity.workloads.names import preload_modules
for name in preload_modules("hf:gpt2"):
    importlib.import_module(name)
before = set(sys.modules)
import torch
from transformers import AutoModelForCausalLM, GPT2Config
model = AutoModelForCausalLM.from_config(
    GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=32)
)
model.generate(torch.zeros(1, 4, dtype=torch.long), max_new_tokens=2, do_sample=False,
               pad_token_id=0)
print(sorted(n for n in set(sys.modules) - before if n.startswith("transformers")))
"""


def test_an_hf_repeat_imports_little_of_transformers_after_the_zygote_s_preload() -> None:
    """transformers imports its parts lazily: with ``transformers`` alone preloaded, each
    forked repeat imported its model base and generation loop again (148 modules, 1.6 s
    of a tiny GPT-2 repeat's 2.1 s here); what is left is the architecture's own."""
    import ast
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", HF_AFTER_PRELOAD], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    new = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert "transformers.modeling_utils" not in new and "transformers.generation.utils" not in new
    assert len(new) <= 25, new
