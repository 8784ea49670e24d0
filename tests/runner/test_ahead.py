"""The parent's imports (its bundle reader, the report's), started while its first worker
starts; none of them is torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys
from parity.runner.ahead import MODULE, import_ahead
assert "torch" not in sys.modules
thread = import_ahead()
assert thread is not None and thread.daemon
assert import_ahead() is None  # once per process
thread.join(timeout=300)
print(MODULE in sys.modules, "torch" in sys.modules)
"""

EARLY_EXIT = """
from parity.runner.ahead import import_ahead
import_ahead()
raise SystemExit(3)  # ends while the thread imports: joined at exit, no crash
"""


@pytest.mark.slow
def test_the_bundle_reader_is_imported_in_a_thread_once_and_torch_never() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["True", "False"], done.stderr


@pytest.mark.slow
def test_a_process_that_ends_at_once_exits_with_its_own_status() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EARLY_EXIT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 3 and "Fatal" not in done.stderr, done.stderr


SETTLE = """
import sys
from parity.runner.ahead import import_ahead, settle
first = import_ahead()
report = import_ahead("parity.report.plots", "parity.report.html")
assert first is not None and report is not None and first is not report
assert import_ahead("parity.report.plots", "parity.report.html") is None
settle()  # what the rounds wait for: every import started ahead has ended
print(first.is_alive(), report.is_alive(), "matplotlib" in sys.modules)
"""


@pytest.mark.slow
def test_the_report_imports_start_apart_and_are_settled_before_the_timed_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SETTLE], capture_output=True, text=True, timeout=300
    )
    assert done.stdout.split() == ["False", "False", "True"], done.stderr
