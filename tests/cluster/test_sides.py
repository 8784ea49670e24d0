"""Sides on the nodes of a real local Ray cluster the test starts (a head and two workers
with the resources ``side-a`` and ``side-b``): each side on its own node (asserted from
the node ids its bundles record), bundles published to moto's S3 server and judged again
from there, a node killed mid-side, and bad input refused before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parity import storage
from parity.bundle import load_bundle, load_side
from parity.model.codec import encode
from parity.testing import hold
from parity.testing.raycluster import RayCluster, free_port, patience
from tests.conftest import run_cli
from tests.fixtures.runs import synthetic_run
from tests.fixtures.servers import S3

#: bad input is refused without hanging, within this on an idle machine, stretched by the
#: load (the issue's 15 s figures are measured idle by the commands in the closing notes)
REFUSED_WITHIN_S = 30

pytestmark = pytest.mark.slow
#: these tests read verdicts and bundles: no HTML report drawn
LEAN = ("--repeats", "2", "--no-compliance", "--steps", "4", "--no-report")


def _gates_and_speed(verdict: dict[str, object]) -> tuple[object, ...]:
    speed = verdict["speed"]
    assert isinstance(speed, dict)
    return (verdict["passed"], verdict["exit_code"], verdict["gates"], speed["verdict"],
            speed["ratio"], speed["interval"])  # fmt: skip


def test_each_side_on_its_own_node_published_to_s3(
    ray_cluster: RayCluster,
    s3_server: S3,
    tmp_path: Path,
) -> None:
    fs, _ = storage.split("s3://parity-test")
    if not fs.exists("parity-test"):
        fs.mkdir("parity-test")
    url = "s3://parity-test/cluster-run1"
    cmp = run_cli(
        "compare", "mlp-train", "--target", "cpu+bf16", "--cluster", ray_cluster.client,
        "--place", "baseline=side-a", "--place", "target=side-b", "--out", url, "--json", *LEAN,
        process=True,
    )  # fmt: skip
    assert cmp.returncode in (0, 1) and cmp.stdout.startswith("{"), cmp.stderr[-3000:]
    verdict = json.loads(cmp.stdout)
    local = encode(synthetic_verdict(tmp_path))
    assert sorted(verdict) == sorted(local)  # the same shape as a local compare
    where = {role: verdict["sides"][role]["placement"] for role in ("baseline", "target")}
    assert where["baseline"]["node_id"] != where["target"]["node_id"]
    assert (where["baseline"]["resource"], where["target"]["resource"]) == ("side-a", "side-b")
    tree = storage.fetch(url)
    for role in ("baseline", "target"):
        side = load_side(tree / role)
        nodes = {b.manifest.environment.placement.node_id for b in side.repeats}  # type: ignore[union-attr]
        assert nodes == {where[role]["node_id"]}, role  # every repeat on the side's node
    again = run_cli("diff", f"{url}/baseline", f"{url}/target", "--json")
    assert again.returncode == cmp.returncode, again.stderr
    assert _gates_and_speed(json.loads(again.stdout)) == _gates_and_speed(verdict)


def synthetic_verdict(tmp_path: Path) -> object:
    from parity.bundle import read_verdict

    return read_verdict(synthetic_run(tmp_path / "local"))[0]


def test_an_unreachable_cluster_is_refused_quickly(tmp_path: Path) -> None:
    start = time.monotonic()
    cli = run_cli(
        "compare", "mlp-train", "--target", "cpu+bf16", "--cluster",
        f"ray://127.0.0.1:{free_port()}",
        "--out", str(tmp_path / "never"), *LEAN, process=True,
    )  # fmt: skip
    assert cli.returncode == 2 and time.monotonic() - start < patience(REFUSED_WITHIN_S), cli.stderr
    assert len(cli.stderr.strip().splitlines()) == 1 and "nothing answers" in cli.stderr
    assert not (tmp_path / "never").exists()


#: a comparison through the Python API, printing when each progress event reached the
#: driver (wall clock) and when each bundle's worker finished
STREAMED = """
import json, sys, time
from parity import api
from parity.request import CompareRequest
seen = []
request = CompareRequest.from_kwargs(
    workload="mlp-train", target="cpu+bf16", repeats=1, compliance=False, steps=300,
    out=sys.argv[2], cluster=sys.argv[1], place=["baseline=side-a", "target=side-b"],
    report=False, wait="5m",
)
result = api.compare(request, progress=lambda label, e: seen.append((label, e.event, time.time())))
ended = {
    f"{r} r00": getattr(result, r).repeats[0].manifest.finished_unix for r in ("baseline", "target")
}
print(json.dumps({"seen": seen, "ended": ended}))
"""


def test_a_remote_sides_progress_reaches_the_driver_while_it_runs(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", STREAMED, ray_cluster.client, str(tmp_path / "cmp")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    for label, ended in said["ended"].items():
        steps = [t for name, kind, t in said["seen"] if name == label and kind == "progress"]
        assert steps and min(steps) < ended, (label, steps[:3], ended)  # before its end


def test_a_side_its_node_cannot_run_is_refused_before_either_side_runs(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """The device is checked on the node the side was given (this machine has no CUDA),
    before any job of either side: exit 2, one line naming the node."""
    out = tmp_path / "nocuda"
    cli = run_cli(
        "compare", "mlp-train", "--baseline", "cpu", "--target", "cuda",
        "--cluster", ray_cluster.client, "--place", "baseline=side-a",
        "--place", "target=side-b", "--out", str(out), "--wait", "5m", *LEAN, process=True,
        timeout=600,
    )  # fmt: skip
    assert cli.returncode == 2, cli.stderr[-3000:]
    line = cli.stderr.strip().splitlines()[-1]
    assert "on node" in line and "cuda" in line.lower(), line
    assert not list(out.glob("*/r00"))  # neither side ran


def _kill_mid_target(
    cluster: RayCluster, held_jobs: Path, out: Path, *more: str
) -> subprocess.Popen[str]:
    """A comparison started, and side-b (the target's node) killed while the target's
    first repeat runs on it (its worker held there, its job read and not ended:
    ``parity.testing.hold``); the comparison's process, still running."""
    hold.arm(held_jobs, "target")
    proc = subprocess.Popen(
        [sys.executable, "-m", "parity", "compare", "mlp-train", "--target", "cpu+bf16",
         "--cluster", cluster.client, "--place", "baseline=side-a",
         "--place", "target=side-b", "--out", str(out), "--json",
         "--repeats", "3", "--no-compliance", "--steps", "40", "--no-report", *more],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 400
    try:
        while not (held_jobs / hold.HELD).exists():  # the target's r00 runs on side-b
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
            time.sleep(0.2)
        assert (held_jobs / hold.HELD).read_text().startswith("target 0 ")
        cluster.kill("side-b")
    except BaseException:
        proc.kill()
        raise
    finally:  # nothing stays held past the kill
        (held_jobs / hold.RELEASE).touch()
    return proc


def test_a_node_lost_with_no_retries_is_that_sides_failure(
    ray_cluster: RayCluster,
    held_jobs: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "killed"
    proc = _kill_mid_target(ray_cluster, held_jobs, out, "--node-retries", "0")
    try:
        stdout, stderr = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
        ray_cluster.add("side-b")
    assert proc.returncode == 1, stderr[-3000:]
    verdict = json.loads(stdout)
    target = verdict["sides"]["target"]
    seen = [(b.path.name, b.status, b.manifest.reason) for b in load_side(out / "target").repeats]
    assert target["status"] == "failed" and "was lost while it ran" in target["reason"], seen
    assert verdict["sides"]["baseline"]["status"] == "ok"  # the other side's results kept
    assert len(load_side(out / "baseline").ok) >= 1


def test_a_job_whose_node_is_lost_runs_again_on_another_node(
    ray_cluster: RayCluster,
    held_jobs: Path,
    tmp_path: Path,
) -> None:
    """The job reruns on a node with the resource (here side-b started again: the rerun
    waits for it, as for an autoscaler's replacement), recorded as an infrastructure event
    in its bundle and the verdict, and the target does not fail."""
    out = tmp_path / "rerun"
    proc = _kill_mid_target(ray_cluster, held_jobs, out, "--wait", "10m")
    try:
        ray_cluster.add("side-b")  # the replacement node
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (0, 1), stderr[-3000:]
    assert "was lost while" in stderr and "ran again on another node" in stderr, stderr[-3000:]
    verdict = json.loads(stdout)
    assert verdict["sides"]["target"]["status"] == "ok", verdict["sides"]["target"]
    notes = verdict["speed"]["stop"]["notes"]
    assert any(n.startswith("infrastructure: the target's node") for n in notes), notes
    first = load_bundle(out / "target" / "r00")
    assert first.ok and first.placement is not None
    lost = first.placement.lost or ()
    assert len(lost) == 1 and lost[0].node_id != first.placement.node_id
