"""A user's workload file on a real local Ray cluster the tests start, whose nodes run in
a working directory of their own: the file (given by a path relative to where parity
runs) and what it imports beside it, a sibling module and a package, travel with the
jobs, and the verdict's workload and gates are a local run's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from parity.bundle import load_side
from parity.cluster.code import user_code
from parity.model.spec import WorkloadSpec
from parity.testing.raycluster import RayCluster, descendants, listening

#: these tests read verdicts and bundles: no HTML report drawn
LEAN = ("--repeats", "2", "--no-compliance", "--steps", "4", "--no-report")

MODEL = """
from typing import Any, ClassVar

from helpers import HIDDEN
from mylib.sizes import tiny

from parity.workloads.mlp import MlpTrain


class MyWorkload(MlpTrain):
    name: ClassVar[str] = "my-mlp"
    sizes: ClassVar[dict[str, dict[str, Any]]] = {**MlpTrain.sizes, "tiny": tiny(HIDDEN)}
"""
HELPERS = "HIDDEN = 24\n"
SIZES = """
from parity.workloads.mlp import MlpTrain


def tiny(hidden):
    return {**MlpTrain.sizes["tiny"], "hidden": hidden}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project: ``my_model.py`` importing ``helpers.py`` and ``mylib/`` beside it,
    and what must not travel (data, a cache, a hidden directory)."""
    home = tmp_path / "project"
    (home / "mylib").mkdir(parents=True)
    (home / "my_model.py").write_text(MODEL)
    (home / "helpers.py").write_text(HELPERS)
    (home / "mylib" / "__init__.py").write_text("")
    (home / "mylib" / "sizes.py").write_text(SIZES)
    (home / "notes.txt").write_text("not python\n")
    (home / ".venv").mkdir()
    (home / ".venv" / "big.py").write_text("x = 1\n")
    (home / "__pycache__").mkdir()
    (home / "data").mkdir()
    (home / "data" / "loose.py").write_text("y = 2\n")  # not a package: stays
    return home


def test_what_travels_is_the_files_python_beside_it(project: Path) -> None:
    files = user_code(WorkloadSpec(name=f"{project}/my_model.py:MyWorkload"))
    assert files is not None
    assert sorted(files) == ["helpers.py", "my_model.py", "mylib/__init__.py", "mylib/sizes.py"]
    assert user_code(WorkloadSpec(name="mlp-train")) is None


def _compare(cwd: Path, out: Path, *cluster: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "parity", "compare", "my_model.py:MyWorkload",
         "--target", "cpu+bf16", "--out", str(out), "--json", *LEAN, *cluster],
        cwd=cwd, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 1) and done.stdout.startswith("{"), done.stderr[-3000:]
    verdict: dict[str, object] = json.loads(done.stdout)
    return verdict


def test_a_sent_file_is_imported_from_where_it_was_written(project: Path, tmp_path: Path) -> None:
    from parity.cluster.node import materialise
    from parity.workloads.registry import resolve

    spec = WorkloadSpec(name="elsewhere/my_model.py:MyWorkload")  # no such path here
    files = user_code(WorkloadSpec(name=f"{project}/my_model.py:MyWorkload"))
    assert files is not None
    home = materialise(tmp_path / "node", files)
    assert materialise(tmp_path / "node", files) == home  # once per content
    workload = resolve(spec, home=str(home))
    assert workload.name == "my-mlp" and workload.describe().config["hidden"] == 24


def _decided(verdict: dict[str, object]) -> list[tuple[object, ...]]:
    quality = verdict["quality"]
    assert isinstance(quality, dict)
    return [(c["name"], c["gated"], c["passed"]) for c in quality["checks"]]


@pytest.mark.slow
def test_a_workload_file_runs_on_nodes_that_do_not_share_its_path(
    ray_cluster: RayCluster, project: Path, tmp_path: Path
) -> None:
    placed = ("--cluster", ray_cluster.client, "--place", "baseline=side-a",
              "--place", "target=side-b")  # fmt: skip
    remote = _compare(project, tmp_path / "remote", *placed)
    local = _compare(project, tmp_path / "local")
    assert remote["workload"] == local["workload"]  # the same fingerprint and description
    assert remote["gates"] == local["gates"] and remote["passed"] == local["passed"]
    # each quality check decided alike (its figures differ in the last bits: a Ray node
    # of one CPU runs its workers with one thread, so float sums run in another order)
    assert _decided(remote) == _decided(local)
    for role in ("baseline", "target"):
        side = load_side(tmp_path / "remote" / role)
        assert len(side.ok) == 2, [b.manifest.reason for b in side.repeats]
        job = json.loads((side.ok[0].path / "job.json").read_text())
        home = Path(job["home"])  # imported from where the node wrote it, not from here
        assert home.name != project.name and not home.is_relative_to(project)
        assert job["workload"]["name"] == "my_model.py:MyWorkload"


@pytest.mark.slow
def test_the_client_server_listens_on_loopback_only(ray_cluster: RayCluster) -> None:
    port = int(ray_cluster.client.rsplit(":", 1)[1])
    found = listening(port)
    assert found and all(a.startswith("127.") for a in found), found


@pytest.mark.slow
def test_the_head_s_client_proxy_runs_without_grpc_fork_handlers(ray_cluster: RayCluster) -> None:
    # the proxy forks a server for each driver; with grpcio's fork handlers on, the child
    # died at once on a first join in 8 of 21 starts here (ray-project/ray#63202)
    head = ray_cluster.nodes["head"].pid
    proxies = [
        pid
        for pid in descendants(head)
        if b"--mode=proxy" in _read(f"/proc/{pid}/cmdline").split(b"\0")
    ]
    assert len(proxies) == 1, proxies
    environ = _read(f"/proc/{proxies[0]}/environ").split(b"\0")
    assert b"GRPC_ENABLE_FORK_SUPPORT=false" in environ


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:  # the process ended meanwhile
        return b""
