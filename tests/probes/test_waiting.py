"""How long a process's threads waited for a core (``probes.waiting``), against busy
processes this test starts on every core and ends by their own ids."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from parity.probes.waiting import Waiting, run_delay_s

pytestmark = pytest.mark.skipif(
    run_delay_s() is None, reason="the kernel keeps no per-thread run delay here"
)


@pytest.mark.slow  # starts a process
def test_a_process_competing_for_the_cores_waits_and_the_figure_says_so() -> None:
    cores = os.cpu_count() or 1
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores + 1)]
    try:
        time.sleep(0.3)
        waiting = Waiting()
        end = time.perf_counter() + 1.0
        while time.perf_counter() < end:
            pass
        share = waiting.share()
    finally:
        for p in busy:
            p.kill()
            p.wait()
    # cores + 2 runnable on ``cores``: each waits about 2 / (cores + 2) of the time
    assert share is not None and share > 0.1, share


def test_the_figure_is_never_negative_and_counts_every_thread() -> None:
    waiting = Waiting()
    time.sleep(0.05)
    share = waiting.share()
    assert share is not None and share >= 0.0
