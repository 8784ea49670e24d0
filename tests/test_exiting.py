"""Leaving without the interpreter's teardown keeps what a normal exit keeps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """
import atexit, sys, threading, time
{imports}
from parity.exiting import leave
out = sys.argv[1]
atexit.register(lambda: open(out + ".atexit", "w").write("ran"))
def late():
    time.sleep(0.3)
    open(out + ".thread", "w").write("joined")
threading.Thread(target=late).start()
sys.stdout.write("buffered, no newline")
sys.stderr.write("to stderr")
leave(3)
"""


@pytest.mark.slow
@pytest.mark.parametrize("imports", ["import torch", ""], ids=["torch", "no-torch"])
def test_leave_runs_atexit_joins_threads_flushes_and_keeps_the_code(
    tmp_path: Path, imports: str
) -> None:
    out = tmp_path / "mark"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(imports=imports), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, no newline" and done.stderr == "to stderr"
    assert Path(f"{out}.atexit").read_text() == "ran"
    assert Path(f"{out}.thread").read_text() == "joined"
