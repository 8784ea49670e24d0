"""Hostile surroundings and workloads, end to end (issue 30, classes 5, 6, 9, 10, 11):
files in the working directory that shadow modules, workloads that change torch's global
settings, fork children or flood their logs, and sides that cannot run. Each class is a
table; every case starts real processes, so they are slow-marked and kept lean (two or
three steps, one repeat, one side where one is enough)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

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
