"""Multi-process runs under torchrun with gloo on the CPU."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from parity.bundle import load_bundle
from parity.testing.pace import patience
from tests.conftest import FIXTURES, run_cli

pytestmark = pytest.mark.slow


def test_scaling_report_for_one_and_two_processes(tmp_path: Path) -> None:
    out = tmp_path / "scale"
    res = run_cli(
        "scale",
        "mlp-train",
        "--device",
        "cpu",
        "--scaling",
        "1,2",
        "--steps",
        "12",
        "--out",
        str(out),
        "--json",
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    one, two = report["points"]
    assert one["nproc"] == 1 and two["nproc"] == 2 and two["status"] == "ok"
    assert one["efficiency"] == 1.0 and two["efficiency"] > 0
    assert 0 <= two["allreduce_share"] <= 1
    bundle = load_bundle(out / "n2")
    assert bundle.metrics is not None and bundle.metrics.distributed is not None
    assert [r.rank for r in bundle.metrics.distributed.per_rank] == [0, 1]
    assert bundle.manifest.distributed is not None and bundle.manifest.distributed.world_size == 2
    assert str(bundle.manifest.side) == "cpu+nproc=2"
    # same global batch: the 1- and 2-process loss curves pass the quality gate
    curves = report["loss_curves"]
    assert curves["passed"], curves
    loss = next(c for c in curves["quality"]["checks"] if c["kind"] == "loss")
    assert loss["max_rel"] < 1e-4


def test_a_killed_rank_fails_the_side_within_the_timeout(tmp_path: Path) -> None:
    timeout = round(patience(120))  # a busy machine starts the ranks slower
    start = time.monotonic()
    res = run_cli(
        "run",
        f"{FIXTURES / 'workloads.py'}:KillRankOne",
        "--device",
        "cpu+nproc=2",
        "--steps",
        "8",
        "--out",
        str(tmp_path / "b"),
        "--timeout",
        str(timeout),
    )
    elapsed = time.monotonic() - start
    assert res.returncode == 1
    assert elapsed < timeout / 2  # the lost rank ended it, not the timeout
    bundle = load_bundle(tmp_path / "b")
    assert bundle.status == "failed"
    assert (bundle.manifest.reason or "").startswith("rank 1 killed by SIGKILL")


def test_nproc_must_divide_the_batch(tmp_path: Path) -> None:
    res = run_cli(
        "scale", "mlp-train", "--device", "cpu", "--scaling", "1,3", "--out", str(tmp_path / "s")
    )
    assert res.returncode == 2 and "does not split over [3]" in res.stderr
