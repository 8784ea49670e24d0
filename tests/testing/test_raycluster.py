"""The test cluster's reading of ``ray status``: a node counts once it is listed and its
resource is there exactly once (a killed node lingers in the listing for seconds). A node
whose ``ray start`` ran out of Ray's own fixed wait for its raylet is started again; any
other end of a start is an error at once."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from parity.testing.raycluster import (
    NODE_STARTS,
    STARTED,
    STARTUP_TIMED_OUT,
    _started,
    active,
    start_node,
    totals,
)

STATUS = """======== Autoscaler status: 2026-12-02 04:33:10.451303 ========
Node status
---------------------------------------------------------------
Active:
 1 node_01ba
 1 node_6100
 1 node_77aa
Pending:
 (no pending nodes)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/2.0 CPU
 0B/45.89GiB memory
 0B/160.00MiB object_store_memory
 0.0/1.0 side-a
 1.0/2.0 side-b

From request_resources:
 (none)
"""


def test_totals_are_read_per_resource() -> None:
    have = totals(STATUS)
    assert have["side-a"] == 1.0 and have["side-b"] == 2.0 and have["CPU"] == 2.0
    assert "request_resources" not in " ".join(have)


def test_no_usage_section_is_no_resources() -> None:
    assert totals("Active:\n (no nodes)\n") == {}


def test_active_nodes_are_read_by_id() -> None:
    assert active(STATUS) == {"node_01ba", "node_6100", "node_77aa"}
    assert active("Pending:\n node_99\n") == set()


class Starts:
    """Real processes standing in for ``ray start``: each launch runs the next script
    (the last one for every launch after it), writing what that script prints to the log."""

    def __init__(self, log: Path, *scripts: str) -> None:
        self.log, self.scripts = log, scripts
        self.procs: list[subprocess.Popen[bytes]] = []

    def __call__(self) -> subprocess.Popen[bytes]:
        script = self.scripts[min(len(self.procs), len(self.scripts) - 1)]
        with self.log.open("wb") as out:
            proc = subprocess.Popen(
                ["sh", "-c", script], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.procs.append(proc)
        return proc


TIMED_OUT = f"echo 'Exception: The current node {STARTUP_TIMED_OUT}. ...'; exit 1"
RUNS = f"echo '{STARTED}'; exec sleep 60"


def test_a_node_whose_start_timed_out_in_ray_is_started_again(tmp_path: Path) -> None:
    log = tmp_path / "side-a.log"
    starts = Starts(log, TIMED_OUT, RUNS)
    proc = start_node(starts, log, _started, timeout=30)
    try:
        assert proc is starts.procs[1] and proc.poll() is None  # the second one runs
        assert starts.procs[0].returncode == 1
        assert STARTUP_TIMED_OUT in (tmp_path / "side-a.log.1").read_text()  # kept
        assert STARTED in log.read_text()
    finally:
        proc.kill()
        proc.wait()


def test_another_end_of_a_start_is_raised_at_once(tmp_path: Path) -> None:
    log = tmp_path / "side-b.log"
    starts = Starts(log, "echo 'ValueError: bad --resources'; exit 1", RUNS)
    with pytest.raises(RuntimeError, match="bad --resources"):
        start_node(starts, log, _started, timeout=30)
    assert len(starts.procs) == 1


def test_a_node_that_keeps_timing_out_is_raised_after_its_last_start(tmp_path: Path) -> None:
    log = tmp_path / "head.log"
    starts = Starts(log, TIMED_OUT)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=STARTUP_TIMED_OUT):
        start_node(starts, log, _started, timeout=30)
    assert len(starts.procs) == NODE_STARTS
    assert all(p.returncode == 1 for p in starts.procs)
    assert time.monotonic() - t0 < 20  # ended starts are noticed, not waited out
