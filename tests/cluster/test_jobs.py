"""``parity compare --submit`` on the real local Ray cluster (its head serving the
dashboard) with results in moto's real S3 server: the command returns with a job id at
once, the job runs to its end though whoever followed it is killed, ``parity wait`` then
collects the verdict and the comparison's own exit code, the bundles are at the URL, and
no secret of the submitter's environment is in the job's runtime_env or its logs. Bad
input (no dashboard, an unknown job, no shared --out) is one line and exit code 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from parity import storage
from parity.testing.raycluster import RayCluster, free_port, patience
from tests.conftest import run_cli
from tests.fixtures.servers import S3

pytestmark = pytest.mark.slow
BUCKET = "parity-jobs"
#: bad input is refused without hanging, within this on an idle machine, stretched by the load
REFUSED_WITHIN_S = 30


def _refused(cli: subprocess.CompletedProcess[str], *words: str) -> None:
    assert cli.returncode == 2, (cli.returncode, cli.stderr[-2000:])
    lines = cli.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("parity: error:"), cli.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_submit_needs_a_cluster_and_a_shared_out(tmp_path: Path) -> None:
    _refused(run_cli("compare", "mlp-train", "--target", "cpu", "--submit"), "--cluster")
    cli = run_cli(
        "compare", "mlp-train", "--target", "cpu", "--submit", "--cluster",
        "ray://127.0.0.1:1", "--out", "relative/run",
    )  # fmt: skip
    _refused(cli, "--out")
    _refused(run_cli("compare", "mlp-train", "--dashboard", "http://h:1"), "--submit")


def test_no_dashboard_is_one_line() -> None:
    nothing = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    for argv in (("status", "parity-x"), ("wait", "parity-x"), ("logs", "parity-x")):
        cli = run_cli(*argv, "--dashboard", nothing, process=True, timeout=120)
        _refused(cli, "dashboard")
    assert time.monotonic() - start < 3 * patience(REFUSED_WITHIN_S)
    cli = run_cli("status", "parity-x", env={"RAY_API_SERVER_ADDRESS": ""})
    _refused(cli, "--dashboard")


def _bucket(s3: S3) -> str:
    fs, _ = storage.split(f"s3://{BUCKET}")
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return f"s3://{BUCKET}"


def test_a_submitted_comparison_outlives_its_follower(
    ray_cluster: RayCluster, s3_server: S3, tmp_path: Path
) -> None:
    assert ray_cluster.dashboard is not None
    dash = ["--dashboard", ray_cluster.dashboard]
    cli = run_cli("status", "parity-nosuch", *dash, process=True, timeout=120)
    _refused(cli, "no job")

    url = f"{_bucket(s3_server)}/submitted/run"
    began = time.monotonic()
    cli = run_cli(
        "compare", "mlp-train", "--target", "cpu+bf16", "--steps", "6", "--repeats", "2",
        "--cluster", ray_cluster.client, "--place", "baseline=side-a",
        "--place", "target=side-b", "--out", url, "--submit", *dash,
        process=True, timeout=300,
    )  # fmt: skip
    returned = time.monotonic() - began
    assert cli.returncode == 0, cli.stderr[-3000:]
    job = cli.stdout.strip()
    assert job.startswith("parity-mlp-train-"), cli.stdout
    assert f"parity status {job}" in cli.stderr and url in cli.stderr
    print(f"submit returned in {returned:.1f} s (load {os.getloadavg()[0]:.1f})")

    # a follower killed mid-run (its whole process group): the job goes on
    follower = subprocess.Popen(
        [sys.executable, "-m", "parity", "logs", job, "--follow", *dash],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + patience(300)
    while time.monotonic() < deadline:
        status = run_cli("status", job, *dash, process=True, timeout=120)
        assert status.returncode == 0, status.stderr
        if "RUNNING" in status.stdout or "SUCCEEDED" in status.stdout:
            break
        time.sleep(2)
    assert "RUNNING" in status.stdout or "SUCCEEDED" in status.stdout, status.stdout
    os.killpg(follower.pid, signal.SIGKILL)
    follower.wait(timeout=60)
    assert follower.returncode == -signal.SIGKILL

    done = run_cli("wait", job, *dash, "--json", process=True, timeout=int(patience(900)))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    verdict = json.loads(done.stdout)
    assert verdict["exit_code"] == done.returncode
    assert verdict["sides"]["target"]["bundle"] == f"{url}/target"
    assert storage.exists(url)  # committed at the URL
    status = run_cli("status", job, *dash, process=True, timeout=120)
    assert f"exit code {done.returncode}" in status.stdout and url in status.stdout

    logs = run_cli("logs", job, *dash, process=True, timeout=120)
    assert logs.returncode == 0 and "parity" in logs.stdout
    secret = s3_server.env()["AWS_SECRET_ACCESS_KEY"]
    assert secret not in logs.stdout + cli.stdout + cli.stderr + done.stderr
    with urllib.request.urlopen(f"{ray_cluster.dashboard}/api/jobs/{job}", timeout=60) as r:
        found = json.loads(r.read())  # what the cluster keeps of the job (Ray's Jobs API)
    assert secret not in json.dumps(found["runtime_env"]) + json.dumps(found["metadata"])
    assert found["metadata"]["parity_out"] == url
    assert found["driver_node_id"]  # the driver ran on a node of the cluster
