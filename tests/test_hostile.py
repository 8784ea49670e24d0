"""Hostile surroundings and workloads, end to end (issue 30, classes 5, 6, 9, 10, 11):
files in the working directory that shadow modules, workloads that change torch's global
settings, fork children or flood their logs, and sides that cannot run. Each class is a
table; every case starts real processes, so they are slow-marked and kept lean (two or
three steps, one repeat, one side where one is enough)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

#: the installed console script (``python -m parity`` would put the directory first itself)
PARITY = str(Path(sys.executable).parent / "parity")


def _parity(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    import subprocess

    done = subprocess.run(
        [PARITY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stdout, done.stderr


# -- class 5: workers do not import from the working directory ---------------------------------

SHADOWS = [
    # (module planted in the working directory, launcher)
    ("secrets", "fork"),
    ("numpy", "spawn"),
    ("json", "fork"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("module", "launcher"), SHADOWS)
def test_a_module_in_the_working_directory_is_not_imported_into_workers(
    tmp_path: Path, module: str, launcher: str
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    marker = tmp_path / f"imported-{module}"
    (here / f"{module}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise ImportError('planted {module}.py')\n"
    )
    # a user file next to it still imports its own sibling (its directory is added for it)
    (here / "helper_for_parity.py").write_text("STEPS = 2\n")
    (here / "wl.py").write_text(
        "from helper_for_parity import STEPS\n"
        "from parity.workloads.mlp import MlpTrain\n"
        "class Tiny(MlpTrain):\n"
        "    sizes = {**MlpTrain.sizes, 'tiny': {**MlpTrain.sizes['tiny'], 'steps': STEPS}}\n"
    )
    rc, out, err = _parity(
        "run",
        "wl.py:Tiny",
        "--device",
        "cpu",
        "--out",
        str(tmp_path / "out"),
        cwd=here,
        env={"PARITY_LAUNCHER": launcher},
    )
    assert rc == 0, err
    assert not marker.exists(), f"{module}.py from the working directory was imported"
    assert "median steady step" in out


# -- class 10: no process outlives the comparison ----------------------------------------------

LEAVERS = [
    # (what the workload leaves, launcher)
    ("fork", "fork"),
    ("setsid", "fork"),
    ("popen", "spawn"),
    ("setsid", "spawn"),
]


def _alive(pid: int) -> bool:
    """Running (a zombie is dead: it only waits for its parent to read its status)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
@pytest.mark.parametrize(("leaves", "launcher"), LEAVERS)
def test_processes_a_workload_leaves_do_not_outlive_the_run(
    tmp_path: Path, leaves: str, launcher: str
) -> None:
    import signal

    pids = tmp_path / "pids"
    pids.touch()
    try:
        rc, _, err = _parity(
            "run",
            f"{FIXTURES / 'hostile.py'}:LeavesProcesses",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "out"),
            cwd=tmp_path,
            env={"HOSTILE_PIDS": str(pids), "HOSTILE_LEAVE": leaves, "PARITY_LAUNCHER": launcher},
        )
        assert rc == 0, err
        left = [int(x) for x in pids.read_text().split()]
        assert left, "the workload started nothing: the test proves nothing"
        time.sleep(0.5)
        assert [p for p in left if _alive(p)] == [], f"{leaves} ({launcher}) left orphans"
    finally:  # never leave them on the machine, whatever the outcome
        for pid in (int(x) for x in pids.read_text().split()):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# -- class 9: sides that cannot run are refused in the pre-flight --------------------------------


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _installed(device: str) -> bool:
    import torch

    module = getattr(torch, device, None)
    return bool(module is not None and getattr(module, "is_available", lambda: False)())


UNUSABLE = [
    # (command after ``parity``, what the line says)
    (["compare", "mlp-train", "--baseline", "cpu", "--target", "cpu:99"], "cpu:99 does not exist"),
    (["run", "mlp-train", "--device", "neuron", "--out", "o"], "'neuron' is not available"),
    (["compare", "mlp-train", "--target", "cuda+bf16"], "'cuda' is not available"),
    (
        ["compare", "mlp-train", "--target", "cpu+compile=no_such_backend"],
        "compile backend 'no_such_backend' is not registered",
    ),
    (
        ["run", "mlp-train", "--device", f"cpu+threads={_cores() + 1}", "--out", "o"],
        "logical cores",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), UNUSABLE, ids=lambda v: str(v)[:40])
def test_a_side_this_machine_cannot_run_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    from tests.fixtures.cli import refuses

    for device in ("cuda", "neuron"):
        if any(device in a for a in args) and _installed(device):
            pytest.skip(f"{device} is installed here")
    refuses(args, message, lambda root: None, tmp_path, monkeypatch, stub=False)


# -- class 6: the recorded settings are what ran -------------------------------------------------

SETTINGS = [
    # (what the workload changes in build_model, the change named, whether it fails: the
    # bundle is judged against itself, so every change is alike on both sides, and only
    # an unfair one fails)
    ("dtype", "default_dtype was torch.float32 at set-up, in the timed steps baseline", True),
    ("threads", "num_threads was 2 at set-up, in the timed steps baseline 1, target 1", False),
    ("matmul", "float32_matmul_precision was highest at set-up, in the timed steps", False),
    ("several", "deterministic_algorithms was False at set-up, in the timed steps", False),
]


@pytest.mark.slow
@pytest.mark.parametrize(("setting", "said", "fails"), SETTINGS)
def test_a_setting_the_workload_changes_is_recorded_named_and_judged(
    tmp_path: Path, setting: str, said: str, fails: bool
) -> None:
    from parity.bundle import load_bundle, load_side
    from parity.judge.verdict import judge
    from parity.report import words
    from parity.report.markdown import format_markdown
    from parity.report.view import build_view
    from tests.fixtures.cli import invoke

    out = tmp_path / "b"
    rc, _, err = _parity(
        "run",
        f"{FIXTURES / 'hostile.py'}:ChangesSettings",
        "--device",
        "cpu+threads=2",
        "--out",
        str(out),
        cwd=tmp_path,
        env={"HOSTILE_SETTING": setting},
    )
    assert rc == 0, err
    resolved = load_bundle(out).manifest.resolved
    assert resolved is not None and resolved.timed is not None and resolved.changed
    if setting == "threads":  # the manifest records what ran, not what was asked
        assert resolved.threads == 1 and resolved.timed.num_threads == 1
    if setting == "several":  # and so do its environment's flags (issue 53, class 8)
        flags = load_bundle(out).manifest.environment.flags
        assert (flags.num_threads, flags.deterministic_algorithms) == (1, True)
        assert flags.float32_matmul_precision == "high"
        assert resolved.threads == 1 and resolved.deterministic
    verdict = judge(load_side(out), load_side(out))
    gate = next(g for g in verdict.gates if g.name == "settings as set up")
    assert said in words.gate(gate) and gate.passed is not fails
    assert verdict.contract.holds is not fails
    assert said in format_markdown(build_view(verdict))
    shown = invoke("diff", str(out), str(out), "--wide", "--verbose")
    assert said in shown.stdout.replace("\n", " ") or said in " ".join(shown.stdout.split())
