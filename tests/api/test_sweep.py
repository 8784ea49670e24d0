"""``parity sweep``: the plan's matrix, the summary in three forms, and a sweep stopped
halfway finished with ``--resume`` running only the missing comparisons."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from parity.api.sweep import Outcome, load_sweep, summary_rows
from parity.bundle import read_verdict
from parity.errors import PlanError
from parity.report.sweep import markdown, to_html
from tests.conftest import run_cli
from tests.fixtures.runs import synthetic_run

PLAN = """
[sweep]
workloads = ["mlp-train", "cnn-infer"]
pairs = [["cpu", "cpu+bf16"], ["cpu", "cpu+threads=1"]]
steps = 4
out = "{out}"

[measure]
repeats = 1
compliance = false
"""


def _plan(tmp_path: Path, out: Path) -> Path:
    plan = tmp_path / "sweep.toml"
    plan.write_text(PLAN.format(out=out))
    return plan


def test_the_matrix_and_its_summary(tmp_path: Path) -> None:
    plan = load_sweep(_plan(tmp_path, tmp_path / "s"))
    names = [c.name for c in plan.cells]
    assert names == [
        "mlp-train-cpu-vs-cpu+bf16",
        "mlp-train-cpu-vs-cpu+threads=1",
        "cnn-infer-cpu-vs-cpu+bf16",
        "cnn-infer-cpu-vs-cpu+threads=1",
    ]
    assert all(c.out == str(tmp_path / "s" / c.name) for c in plan.cells)
    verdict = read_verdict(synthetic_run(tmp_path / "v", target_scale=0.7))[0]
    rows = summary_rows(
        [Outcome(cell=plan.cells[0], verdict=verdict), Outcome(cell=plan.cells[1], error="boom")]
    )
    assert rows[0]["result"] == ("PASS" if verdict.passed else "FAIL")
    assert verdict.speed is not None and f"{verdict.speed.ratio:.3g} [" in rows[0]["speed"]
    assert rows[1]["result"] == "error" and rows[1]["note"] == "boom"
    assert markdown(rows).count("\n") == 4 and "<td>boom</td>" in to_html(rows)


def test_a_bad_plan_names_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[sweep]\nworkloads = ["mlp-train"]\npairs = [["cpu", "nope"]]\nout = "x"\n')
    with pytest.raises(PlanError, match="nope"):
        load_sweep(bad)


@pytest.mark.slow
def test_resume_runs_only_the_missing_comparisons(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    plan = _plan(tmp_path, out)
    cells = load_sweep(plan).cells
    for cell in cells[:3]:  # finished before the sweep was stopped
        synthetic_run(Path(cell.out), target_scale=0.9)
    before = {c.name: os.stat(Path(c.out) / "verdict.json").st_mtime_ns for c in cells[:3]}
    refused = run_cli("sweep", str(plan))
    assert refused.returncode == 2 and "--resume" in refused.stderr
    start = time.monotonic()
    done = run_cli("sweep", str(plan), "--resume", "--out", str(out))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert {c.name: os.stat(Path(c.out) / "verdict.json").st_mtime_ns for c in cells[:3]} == before
    assert (Path(cells[3].out) / "verdict.json").is_file()  # the missing one, run now
    assert done.stdout.count("before") == 3 and done.stdout.count("now") == 1
    summary = (out / "summary.md").read_text()
    assert all(c.name in summary for c in cells) and time.monotonic() - start < 600
