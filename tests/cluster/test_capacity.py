"""Waiting for a side's pool on a real local Ray cluster: a pool another holds is waited
for with a live line and taken when it is given back; a pool no node offers ends, after
``--wait``, as a capacity failure (exit code 4, its own line), not bad input; and two
sides on two nodes run their rounds side by side (said in the verdict), neither side's
pool held while the other's is waited for."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parity.errors import EXIT_CAPACITY
from parity.testing.raycluster import RayCluster, patience
from tests.conftest import run_cli

pytestmark = pytest.mark.slow
LEAN = ("--repeats", "2", "--no-compliance", "--steps", "4", "--no-report")

#: a process that holds ``side-b`` (a placement group, as another comparison's side would)
#: until its stdin closes
HOLD = """
import sys, ray
from ray.util.placement_group import placement_group
ray.init(address=sys.argv[1], namespace="other", logging_level="ERROR", log_to_driver=False)
pg = placement_group([{"side-b": 1}])
ray.get(pg.ready(), timeout=240)
print("held", flush=True)
sys.stdin.read()
"""


def _holder(cluster: RayCluster) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, cluster.client],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "held", proc.stderr.read() if proc.stderr else line
    return proc


#: whether a pool is free now: reserved and given back at once, or "taken" after a while
FREE = """
import sys, ray
from ray.util.placement_group import placement_group, remove_placement_group
ray.init(address=sys.argv[1], namespace="probe", logging_level="ERROR", log_to_driver=False)
pg = placement_group([{sys.argv[2]: 1}])
print("free" if pg.wait(timeout_seconds=float(sys.argv[3])) else "taken", flush=True)
remove_placement_group(pg)
"""


def _free(cluster: RayCluster, resource: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", FREE, cluster.client, resource, str(patience(30))],
        capture_output=True, text=True, timeout=patience(300),
    )  # fmt: skip
    return done.stdout.strip() or done.stderr[-2000:]


def _let_go(proc: subprocess.Popen[str]) -> None:
    """Its stdin closed, so it ends (and its placement group with its job); its pipes
    closed."""
    if proc.stdin is not None and not proc.stdin.closed:
        proc.communicate(input="", timeout=120)


def test_a_pool_no_node_offers_ends_as_a_capacity_failure_after_wait(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    start = time.monotonic()
    cli = run_cli(
        "compare", "mlp-train", "--target", "cpu+bf16", "--cluster", ray_cluster.client,
        "--place", "baseline=side-a", "--place", "target=neuron_cores:2", "--wait", "25s",
        "--out", str(tmp_path / "never"), *LEAN, process=True, timeout=400,
    )  # fmt: skip
    took = time.monotonic() - start
    assert cli.returncode == EXIT_CAPACITY, cli.stderr[-3000:]
    waits = [line for line in cli.stderr.splitlines() if "waiting for a node with" in line]
    assert waits and "neuron_cores:2" in waits[0] and "no live node offers it yet" in waits[0]
    assert "side-a" in waits[0]  # what the nodes do offer
    last = cli.stderr.strip().splitlines()[-1]
    assert last.startswith("parity: no capacity:") and "--wait" in last, last
    assert took >= 25  # it waited --wait
    assert not list((tmp_path / "never").glob("*/r00"))  # no side ran


def test_a_busy_pool_is_waited_for_and_taken_when_given_back(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    holder = _holder(ray_cluster)
    out = tmp_path / "waited"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "parity", "compare", "mlp-train", "--target", "cpu+bf16",
             "--cluster", ray_cluster.client, "--place", "baseline=side-a",
             "--place", "target=side-b", "--wait", "10m", "--out", str(out), "--json", *LEAN],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        seen = []
        deadline = time.monotonic() + 500
        for line in proc.stderr:  # the live line, while the other holds the pool
            seen.append(line)
            if "waiting for a node with side-b" in line:
                break
            assert time.monotonic() < deadline, "".join(seen)
        assert "busy" in seen[-1] and "of --wait 10.0 min" in seen[-1], seen[-1]
        # the baseline's pool is not held while the target's is waited for
        assert "side-a not held meanwhile" in seen[-1], seen[-1]
        assert _free(ray_cluster, "side-a") == "free"
        _let_go(holder)
        stdout, stderr = proc.communicate(timeout=500)
    finally:
        _let_go(holder)
    assert proc.returncode in (0, 1), "".join(seen) + stderr[-3000:]
    verdict = json.loads(stdout)
    assert verdict["sides"]["target"]["status"] == "ok"
    notes = verdict["speed"]["stop"]["notes"]
    assert any("side by side" in n for n in notes), notes
