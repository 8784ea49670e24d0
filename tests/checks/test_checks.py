"""The three checks end to end on the CPU (fresh worker processes), each with a failing
case, and a passing check ticking the verdict's "not yet proven" list."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from parity import api
from parity.bundle import load_bundle
from parity.checks.recovery import recovery
from parity.checks.rollback import rollback
from parity.checks.soak import soak
from parity.runner.measure import Plan
from parity.schemas import schema
from parity.spec import WorkloadSpec
from tests.conftest import run_cli

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent
FORGETS_WARMUP = f"{HERE / 'fixtures.py'}:ForgetsWarmup"
LEAKY = f"{HERE / 'fixtures.py'}:LeakyInfer"
ONLY_FILES = {".json", ".jsonl", ".log", ".safetensors"}


def _gate(data: dict[str, Any], start: str) -> dict[str, Any]:
    return next(g for g in data["gates"] if g["name"].startswith(start))


def _no_pickles(root: Path) -> None:
    for path in root.rglob("*"):
        assert path.is_dir() or path.suffix in ONLY_FILES, path


def _valid(bundle: Path) -> None:
    """The parts' bundles have the usual documents (the JSON Schemas of parity schema)."""
    for name in ("manifest", "metrics", "numerics"):
        if (bundle / f"{name}.json").is_file():
            doc = json.loads((bundle / f"{name}.json").read_text())
            errors = [e.message for e in Draft202012Validator(schema(name)).iter_errors(doc)]
            assert not errors, (bundle, name, errors)


@pytest.fixture(scope="module")
def rollback_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rollback") / "check"
    args = ["--target", "cpu+bf16", "--baseline", "cpu", "--k", "4", "--m", "4"]
    proc = run_cli("check", "rollback", "mlp-train", *args, "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert json.loads(proc.stdout) == json.loads((out / "check.json").read_text())
    return out


def test_rollback_passes_bf16_target_to_fp32_baseline(rollback_dir: Path) -> None:
    data = json.loads((rollback_dir / "check.json").read_text())
    assert data["passed"] and data["item"] == "rollback path"
    assert data["sides"] == {"target": "cpu+bf16", "baseline": "cpu"}
    loss = _gate(data, "loss curve from step 4")
    assert loss["passed"] and loss["tolerance"] == 0.02
    assert data["figures"]["loss_max_rel_diff"] < 1e-3  # measured: ~2e-5
    ckpt = json.loads((rollback_dir / "checkpoint" / "checkpoint.json").read_text())
    assert (ckpt["step"], ckpt["side"], len(ckpt["losses"])) == (4, "cpu+bf16", 4)
    resumed = load_bundle(rollback_dir / "resumed")
    assert resumed.numerics["extra"]["checkpoint"]["restored"]["step"] == 4
    assert resumed.numerics["losses"][:4] == ckpt["losses"]
    _no_pickles(rollback_dir)
    for part in ("baseline", "target", "resumed"):
        _valid(rollback_dir / part)


def test_rollback_fails_when_state_is_not_restored(tmp_path: Path) -> None:
    result = rollback(
        WorkloadSpec(name=FORGETS_WARMUP), "cpu+bf16", "cpu", k=5, m=5, out=tmp_path / "c"
    )
    assert not result.passed and result.exit_code == 1
    loss = _gate(result.data, "loss curve from step 5")
    assert not loss["passed"] and loss["max_rel"] > 0.02  # measured: ~0.08
    assert _gate(result.data, "every part ran")["passed"]


def test_recovery_survives_a_kill_and_continues_the_curve(tmp_path: Path) -> None:
    result = recovery(WorkloadSpec(name="mlp-train"), "cpu", k=4, m=4, out=tmp_path / "c")
    data = result.data
    assert result.passed, data["reason"]
    kill = data["figures"]["kill"]
    assert kill["sent_after_step"] >= 4 and data["bundles"]["killed"]["status"] == "failed"
    assert "SIGKILL" in data["bundles"]["killed"]["reason"]
    assert data["figures"]["loss_max_rel_diff"] <= 1e-6  # measured: 0 (bitwise equal)
    assert load_bundle(tmp_path / "c" / "killed").status == "failed"  # complete, not corrupt
    _no_pickles(tmp_path / "c")
    for part in ("uninterrupted", "killed", "resumed"):
        _valid(tmp_path / "c" / part)


def test_recovery_fails_when_state_is_not_restored(tmp_path: Path) -> None:
    result = recovery(WorkloadSpec(name=FORGETS_WARMUP), "cpu", k=4, m=4, out=tmp_path / "c")
    assert not result.passed
    assert _gate(result.data, "killed after the checkpoint")["passed"]
    loss = _gate(result.data, "loss curve from step 4")
    assert not loss["passed"] and loss["max_rel"] > 1e-3


def test_soak_passes_a_steady_workload(tmp_path: Path) -> None:
    # wall-clock latency on a shared test machine follows its neighbours' load, so the
    # drift bound here is loose (a 10 s run cannot bound drift per hour anyway); the
    # drift gate itself is tested on synthetic windows in test_check_parts.py. One thread:
    # two OpenMP threads on two busy cores wait on each other (steps 10-70x slower)
    out = tmp_path / "c"
    args = ["--device", "cpu+threads=1", "--duration", "10s", "--max-drift", "1e6"]
    args += ["--out", str(out)]
    proc = run_cli("check", "soak", "cnn-infer", *args)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads((out / "check.json").read_text())
    host = _gate(data, "host memory growth")
    assert host["passed"] and host["unit"] == "MiB/min"
    fig = data["figures"]
    assert fig["duration_s"] >= 10 and fig["windows_used"] >= 8
    assert (
        fig["latency_drift"]["low"] <= fig["latency_drift"]["slope"] <= fig["latency_drift"]["high"]
    )
    assert "not measured" in fig["device_allocated_growth"]["detail"]  # the CPU
    _valid(out / "soak")


def test_soak_fails_a_leaking_workload(tmp_path: Path) -> None:
    spec = WorkloadSpec(name=LEAKY)
    result = soak(spec, "cpu+threads=1", 6.0, max_drift=1e6, out=tmp_path / "c")
    assert not result.passed
    host = _gate(result.data, "host memory growth")
    assert not host["passed"] and host["low"] > 1.0  # MiB/min; 256 KiB kept per step
    per_step = result.data["figures"]["host_rss_growth"]["bytes_per_step"]
    assert 0.9 * 2**18 < per_step < 1.1 * 2**18


def test_a_passing_check_ticks_the_verdict_in_compare_and_diff(
    rollback_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cmp"
    result = api.compare(
        WorkloadSpec(name="mlp-train", steps=8),
        "cpu",
        "cpu+bf16",
        out=out,
        plan=Plan(repeats=1, compliance=False),
        checks=[rollback_dir],
    )
    ticked = {u["item"]: u for u in result.verdict.unproven}
    assert ticked["rollback path"]["checked"]
    assert "parity check rollback" in ticked["rollback path"]["evidence"]
    assert not ticked["failure recovery"]["checked"]
    assert (out / "checks" / "rollback" / "check.json").is_file()
    again = api.diff(out / "baseline", out / "target")
    assert again.unproven == result.verdict.unproven
    # the bundles copied elsewhere: ticked only with --checks, then as compare did
    for role in ("baseline", "target"):
        shutil.copytree(out / role, tmp_path / "elsewhere" / role)
    bare = [str(tmp_path / "elsewhere" / role) for role in ("baseline", "target")]
    assert not api.diff(Path(bare[0]), Path(bare[1])).unproven[0]["checked"]
    proc = run_cli("diff", *bare, "--json", "--checks", str(rollback_dir))
    assert json.loads(proc.stdout)["unproven"] == result.verdict.to_dict()["unproven"]
