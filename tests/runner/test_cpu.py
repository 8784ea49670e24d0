"""What other processes took of the machine: counted from /proc, parity's own left out."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from parity.runner.cpu import CpuWatch, machine_busy_s, own_cpu_s, process_cpu_s

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"

#: every test here starts an interpreter that burns CPU
pytestmark = pytest.mark.slow

needs_proc = pytest.mark.skipif(machine_busy_s() is None, reason="needs Linux /proc/stat")


def _burn_here(seconds: float) -> None:
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


@needs_proc
def test_a_process_outside_parity_is_counted_as_interference() -> None:
    watch = CpuWatch(extra=lambda: 0.0)
    # not reaped before finish(): to the watch it is another process on the machine
    burner = subprocess.Popen([sys.executable, "-c", BURN.format(s=1.0)])
    while process_cpu_s(burner.pid) < 1.0 and burner.poll() is None:
        time.sleep(0.05)
    found = watch.finish()
    burner.wait()
    assert found is not None
    assert found.other_cpu_s >= 0.8  # at least the burner (others may add to it)
    assert found.cores == os.cpu_count()
    assert 0 < found.share <= 1
    assert found.lost_s == pytest.approx(found.share * found.wall_s)


@needs_proc
def test_parity_s_own_cpu_time_is_not_interference() -> None:
    before = own_cpu_s()
    _burn_here(0.5)
    assert own_cpu_s() - before >= 0.45
    # a reaped child counts as parity's own through RUSAGE_CHILDREN
    subprocess.run([sys.executable, "-c", BURN.format(s=0.5)], check=True)
    assert own_cpu_s() - before >= 0.9


@needs_proc
def test_a_live_process_s_time_includes_its_reaped_children() -> None:
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.5)!r}])\n"
        "print('done', flush=True)\n"
        "time.sleep(30)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    ) as parent:
        try:
            assert parent.stdout is not None and parent.stdout.readline().strip() == "done"
            assert process_cpu_s(parent.pid) >= 0.45
        finally:
            parent.kill()
    assert process_cpu_s(parent.pid) == 0.0  # gone: nothing to read
