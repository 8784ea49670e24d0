"""``parity check soak``, ``check rollback`` and ``parity scale`` with ``--cluster``, on the
real local Ray cluster the tests start: each runs its sides' processes on the placed
nodes (asserted from the placement every bundle records), a rollback's checkpoint goes
from the target's node to the baseline's, and a resource no node has is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.bundle import load_bundle
from parity.errors import EXIT_CAPACITY
from parity.testing.raycluster import RayCluster
from tests.conftest import run_cli

pytestmark = pytest.mark.slow


def _placed(bundle: Path) -> tuple[str | None, str | None]:
    placement = load_bundle(bundle).manifest.environment.placement
    assert placement is not None, bundle
    return placement.resource, placement.node_id


def test_soak_runs_on_the_placed_node(ray_cluster: RayCluster, tmp_path: Path) -> None:
    out = tmp_path / "soak"
    cli = run_cli(
        "check", "soak", "cnn-infer", "--device", "cpu", "--duration", "8s",
        "--cluster", ray_cluster.client, "--place", "soak=side-b", "--out", str(out), "--json",
        timeout=600, process=True,
    )  # fmt: skip
    # an 8-second soak may honestly be too short to bound a drift (exit 3): placement is
    # what this test is about, and it holds whatever the soak concluded
    assert cli.returncode in (0, 1, 3), cli.stderr[-3000:]
    result = json.loads(cli.stdout)
    assert result["check"] == "soak" and result["exit_code"] == cli.returncode
    resource, node = _placed(out / "soak")
    assert resource == "side-b" and node


def test_rollback_hands_its_checkpoint_from_node_to_node(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    out = tmp_path / "rollback"
    cli = run_cli(
        "check", "rollback", "mlp-train", "--target", "cpu+bf16", "--steps", "6",
        "--cluster", ray_cluster.client, "--place", "baseline=side-a",
        "--place", "target=side-b", "--out", str(out), "--json", timeout=600, process=True,
    )  # fmt: skip
    assert cli.returncode in (0, 1), cli.stderr[-3000:]
    result = json.loads(cli.stdout)
    assert result["check"] == "rollback" and result["passed"], result
    where = {part: _placed(out / part) for part in ("baseline", "target", "resumed")}
    assert where["baseline"] == where["resumed"] and where["baseline"][0] == "side-a"
    assert where["target"][0] == "side-b" and where["target"][1] != where["baseline"][1]
    assert (out / "checkpoint").is_dir()  # the target's node's checkpoint, kept here


def test_scale_runs_every_count_on_one_placed_node(ray_cluster: RayCluster, tmp_path: Path) -> None:
    out = tmp_path / "scale"
    cli = run_cli(
        "scale", "mlp-train", "--device", "cpu", "--scaling", "1,2", "--steps", "4",
        "--batch-size", "8", "--cluster", ray_cluster.client, "--place", "scale=side-a",
        "--out", str(out), "--json", timeout=600, process=True,
    )  # fmt: skip
    assert cli.returncode in (0, 1) and cli.stdout.startswith("{"), cli.stderr[-3000:]
    report = json.loads(cli.stdout)
    assert [p["nproc"] for p in report["points"]] == [1, 2]
    where = {_placed(out / f"n{n}") for n in (1, 2)}
    assert len(where) == 1 and next(iter(where))[0] == "side-a", where


def test_a_resource_no_node_has_is_a_capacity_failure_for_soak_and_scale(
    ray_cluster: RayCluster,
) -> None:
    """Waited for (an autoscaled group may be at zero), then exit 4 after --wait."""
    for argv in (
        ("check", "soak", "cnn-infer", "--device", "cpu", "--place", "soak=neuron_cores"),
        ("scale", "mlp-train", "--device", "cpu", "--place", "scale=neuron_cores"),
    ):
        cli = run_cli(*argv, "--cluster", ray_cluster.client, "--wait", "3s", process=True)
        assert cli.returncode == EXIT_CAPACITY, cli.stderr
        last = cli.stderr.strip().splitlines()[-1]
        assert last.startswith("parity: no capacity:") and "neuron_cores" in last, last
