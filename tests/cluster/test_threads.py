"""A cluster side runs with the threads a local run on its node has: Ray forces
``OMP_NUM_THREADS=1`` on an actor that asks for no CPUs, and parity removes it (recorded in
the placement), so the cluster run's manifest records the same thread settings as a local
run in the node's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from parity.bundle import load_bundle
from parity.cluster.node import ray_thread_vars
from parity.testing.raycluster import RayCluster
from tests.cluster.conftest import THREAD_VARS

pytestmark = pytest.mark.slow


def _run(out: Path, *more: str) -> None:
    node_env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    done = subprocess.run(
        [sys.executable, "-m", "parity", "run", "mlp-train", "--device", "cpu", "--steps", "3",
         "--out", str(out), *more],
        capture_output=True, text=True, timeout=400, env=node_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_cluster_side_records_the_threads_of_a_local_run(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    _run(tmp_path / "local")
    _run(tmp_path / "placed", "--cluster", ray_cluster.client, "--place", "run=side-a")
    local, placed = load_bundle(tmp_path / "local"), load_bundle(tmp_path / "placed")
    assert local.manifest.environment is not None and placed.manifest.environment is not None
    assert placed.placement is not None and placed.placement.unset == {"OMP_NUM_THREADS": "1"}
    threads = {
        name: (b.manifest.environment.flags.num_threads, {  # type: ignore[union-attr]
            k: v for k, v in b.manifest.environment.env.items() if k in THREAD_VARS  # type: ignore[union-attr]
        })
        for name, b in (("local", local), ("placed", placed))
    }  # fmt: skip
    assert threads["placed"] == threads["local"], threads


def test_only_what_ray_set_in_the_process_is_taken_for_rays(tmp_path: Path) -> None:
    started = tmp_path / "environ"
    started.write_bytes(b"PATH=/bin\0MKL_NUM_THREADS=4\0")
    assert ray_thread_vars({"OMP_NUM_THREADS": "1", "PATH": "/bin"}, started) == {
        "OMP_NUM_THREADS": "1"
    }
    started.write_bytes(b"OMP_NUM_THREADS=8\0")  # the node's own setting: kept
    assert ray_thread_vars({"OMP_NUM_THREADS": "8"}, started) == {}
