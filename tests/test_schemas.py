"""The JSON Schemas hold for what parity really writes: bundles and verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from parity.cli import app
from parity.schemas import SCHEMAS, all_schemas, schema
from tests.fixtures.runs import real_run, synthetic_run

runner = CliRunner()


def problems(name: str, document: Any) -> list[str]:
    validator = Draft202012Validator(schema(name))
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


def documents(run: Path) -> list[tuple[str, Path]]:
    """Every schema'd document of a comparison directory, with its schema's name."""
    found = [("verdict", run / "verdict.json")]
    for path in sorted(run.rglob("*.json")):
        stem = path.stem
        if stem in ("manifest", "metrics", "numerics"):
            found.append((stem, path))
        elif path.name == "side.json":
            found.append(("side", path))
    return found


def check_run(run: Path) -> set[str]:
    seen = set()
    for name, path in documents(run):
        assert problems(name, json.loads(path.read_text())) == [], path
        seen.add(name)
    return seen


def test_schemas_are_valid_json_schema() -> None:
    for name in SCHEMAS:
        Draft202012Validator.check_schema(schema(name))
    assert set(all_schemas()) == {"manifest", "metrics", "numerics", "side", "verdict"}


@pytest.mark.parametrize("kind", ["train", "generate", "infer"])
def test_synthetic_runs_validate(kind: str, tmp_path: Path) -> None:
    seen = check_run(synthetic_run(tmp_path / kind, kind=kind))
    assert seen == {"manifest", "metrics", "numerics", "side", "verdict"}


def test_a_failed_side_validates(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "f", target_status="failed")
    check_run(run)
    manifest = json.loads((run / "target" / "r00" / "manifest.json").read_text())
    assert manifest["status"] == "failed"


def test_schemas_catch_broken_documents(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "b")
    verdict = json.loads((run / "verdict.json").read_text())
    metrics = json.loads((run / "baseline" / "r00" / "metrics.json").read_text())
    manifest = json.loads((run / "baseline" / "r00" / "manifest.json").read_text())
    verdict["speed"]["verdict"] = "quicker"
    del verdict["gates"]
    metrics["step_samples_s"] = [-1.0]
    manifest["status"] = "done"
    failed = {**manifest, "status": "failed", "reason": None}
    assert len(problems("verdict", verdict)) == 2
    assert problems("metrics", metrics)
    assert problems("manifest", manifest)
    assert problems("manifest", failed)  # a failed bundle must say why
    # sections a later parity adds are allowed
    assert problems("verdict", {**json.loads((run / "verdict.json").read_text()), "cost": {}}) == []


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["gpt-train", "gpt-generate"])
def test_real_bundles_and_verdicts_validate(
    workload: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    seen = check_run(real_run(tmp_path_factory, workload))
    assert {"manifest", "metrics", "numerics", "verdict"} <= seen


def test_cli_schema() -> None:
    result = runner.invoke(app, ["schema", "verdict"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["title"] == "verdict.json"
    everything = json.loads(runner.invoke(app, ["schema"]).stdout)
    assert set(everything) == set(SCHEMAS)
    bad = runner.invoke(app, ["schema", "bundle"])
    assert bad.exit_code == 2 and "'bundle' is not one of" in bad.stderr


def test_untimed_bundles_need_no_timing() -> None:
    assert problems("metrics", {"reference": True, "dtype": "float64", "device": "cpu"}) == []
    assert problems("metrics", {"mode": "scan", "note": "nothing was timed"}) == []
    assert problems("metrics", {"mode": "other"})
