"""``parity sweep`` on the real local Ray cluster: 2 workloads x 2 targets, each
comparison's sides on their placed nodes; the sweep killed (SIGKILL, its whole process
group) once a comparison has finished, then ``--resume`` runs only the missing ones and
the summary holds all four verdicts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parity.api.sweep import load_sweep
from parity.bundle import load_bundle, read_verdict
from parity.testing.raycluster import RayCluster
from tests.api.test_sweep import PLAN as LOCAL_PLAN
from tests.conftest import run_cli

#: nightly (CI's last step, one process): four cluster comparisons, a kill and a resume
#: take two minutes alone; beside three other test workers on two cores the comparisons
#: of the killed sweep once all ended in errors before one finished
pytestmark = [pytest.mark.slow, pytest.mark.nightly]

#: the local sweep's plan (2 workloads x 2 targets), on the cluster, each side on its node
PLAN = (
    LOCAL_PLAN.replace('out = "{out}"\n', 'out = "{out}"\ncluster = "{cluster}"\n')
    + '\n[place]\nbaseline = "side-a"\ntarget = "side-b"\n'
)
#: the first comparison of the sweep to finish, at most (a busy machine)
FIRST_S = 420


def _verdicts(cells: list[Path]) -> dict[str, int]:
    return {
        c.name: os.stat(c / "verdict.json").st_mtime_ns
        for c in cells
        if (c / "verdict.json").is_file()
    }


def test_a_sweep_killed_halfway_resumes_only_the_missing_comparisons(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    out = tmp_path / "sweep"
    plan = tmp_path / "sweep.toml"
    plan.write_text(PLAN.format(out=out, cluster=ray_cluster.client))
    cells = [Path(c.out) for c in load_sweep(plan).cells]
    log = tmp_path / "sweep.log"
    with log.open("wb") as err:
        sweep = subprocess.Popen(
            [sys.executable, "-m", "parity", "sweep", str(plan)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + FIRST_S
        while not _verdicts(cells) and time.monotonic() < deadline and sweep.poll() is None:
            time.sleep(0.5)
        before = _verdicts(cells)
        assert before, (sweep.poll(), log.read_text()[-3000:])
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait()
    assert len(before) < len(cells), "the sweep finished before it was killed"
    done = run_cli("sweep", str(plan), "--resume", timeout=1200, process=True)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    after = _verdicts(cells)
    assert set(after) == {c.name for c in cells}
    assert {name: after[name] for name in before} == before  # finished: never run again
    assert done.stdout.count("before") == len(before)
    assert done.stdout.count("now") == len(cells) - len(before)
    summary = (out / "summary.md").read_text()
    assert all(c.name in summary for c in cells)
    for cell in cells:  # every comparison's sides ran on their placed nodes
        verdict, _ = read_verdict(cell)
        assert verdict.sides.baseline.side and verdict.sides.target.side
        where = {
            role: load_bundle(cell / role / "r00").manifest.environment.placement
            for role in ("baseline", "target")
        }
        assert where["baseline"] is not None and where["baseline"].resource == "side-a"
        assert where["target"] is not None and where["target"].resource == "side-b"
