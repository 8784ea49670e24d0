"""The fast suite's check (``tests/fixtures/honest.py``), run in a pytest of its own: where
slow tests are left out, a test that starts an interpreter fails and says to mark it
slow; one that calls a system tool and one that starts nothing pass (one marked slow is
left out); where slow tests run too, nothing is watched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CASES = """
import subprocess, sys
import pytest

def test_starts_an_interpreter():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_calls_a_system_tool():
    subprocess.run(["true"], check=True)

@pytest.mark.slow
def test_marked_slow():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_starts_nothing():
    pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("selection", ["not slow", ""])
def test_only_a_fast_test_that_starts_an_interpreter_fails(tmp_path: Path, selection: str) -> None:
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.fixtures.honest", "-p", "no:cacheprovider",
         "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-m", selection,
         "-q", str(tmp_path / "test_cases.py")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    out = done.stdout
    if selection:  # the fast suite: the starter fails at its teardown, named, with the fix
        assert "3 passed, 1 deselected, 1 error" in out, out
        assert "ERROR at teardown of test_starts_an_interpreter" in out, out
        assert "mark it @pytest.mark.slow" in out and "-c pass" in out, out
    else:  # every test selected: nothing is watched
        assert "4 passed" in out and "error" not in out, out
