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
from parity.checks import run_check
from parity.model.checks import CheckGate, CheckResult, Gate, SlopeGate
from parity.model.quality import LossCheck
from parity.request import CheckRequest, CompareRequest
from parity.schemas import schema

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent
FORGETS_WARMUP = f"{HERE / 'fixtures.py'}:ForgetsWarmup"
LEAKY = f"{HERE / 'fixtures.py'}:LeakyInfer"
ONLY_FILES = {".json", ".jsonl", ".log", ".safetensors"}


def _gate(result: CheckResult, start: str) -> CheckGate:
    return next(g for g in result.gates if g.name.startswith(start))


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


def _check(check: str, workload: str, out: Path, side: str, **options: Any) -> CheckResult:
    where = "target" if check == "rollback" else "device"
    bounds = options.pop("bounds", {})
    request = CheckRequest.from_kwargs(
        check,  # type: ignore[arg-type]
        workload=workload,
        out=str(out),
        **{where: side},
        **options,
        **bounds,
    )
    return run_check(request)


@pytest.fixture(scope="module")
def rollback_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rollback") / "check"
    result = _check("rollback", "mlp-train", out, "cpu+bf16", baseline="cpu", k=4, m=4)
    assert result.passed, result.reason
    assert json.loads((out / "check.json").read_text())["passed"] is True
    return out


def test_rollback_passes_bf16_target_to_fp32_baseline(rollback_dir: Path) -> None:
    from parity.bundle import read_doc

    result = read_doc(rollback_dir / "check.json", CheckResult)
    assert result.passed and result.item == "rollback path"
    assert (str(result.sides.target), str(result.sides.baseline)) == ("cpu+bf16", "cpu")
    loss = _gate(result, "loss curve from step 4")
    assert isinstance(loss, LossCheck) and loss.passed and loss.tolerance == 0.02
    cont = result.figures.continuation
    assert cont is not None and cont.loss_max_rel_diff is not None
    assert cont.loss_max_rel_diff < 1e-3  # measured: ~2e-5
    ckpt = json.loads((rollback_dir / "checkpoint" / "checkpoint.json").read_text())
    assert (ckpt["step"], len(ckpt["losses"])) == (4, 4)
    resumed = load_bundle(rollback_dir / "resumed")
    assert resumed.outputs is not None and resumed.outputs.checkpoint is not None
    restored = resumed.outputs.checkpoint.restored
    assert restored is not None and restored.step == 4
    assert list(resumed.losses[:4]) == ckpt["losses"]
    _no_pickles(rollback_dir)
    for part in ("baseline", "target", "resumed"):
        _valid(rollback_dir / part)


def test_rollback_fails_when_state_is_not_restored(tmp_path: Path) -> None:
    result = _check("rollback", FORGETS_WARMUP, tmp_path / "c", "cpu+bf16", k=5, m=5)
    assert not result.passed and result.exit_code == 1
    loss = _gate(result, "loss curve from step 5")
    assert isinstance(loss, LossCheck) and not loss.passed
    assert loss.max_rel is not None and loss.max_rel > 0.02  # measured: ~0.08
    assert _gate(result, "every part ran").passed


def test_recovery_survives_a_kill_and_continues_the_curve(tmp_path: Path) -> None:
    result = _check("recovery", "mlp-train", tmp_path / "c", "cpu", k=4, m=4)
    assert result.passed, result.reason
    kill = result.figures.kill
    assert kill is not None and kill.sent_after_step is not None and kill.sent_after_step >= 4
    killed = result.bundles["killed"]
    assert killed.status == "failed" and killed.reason and "SIGKILL" in killed.reason
    cont = result.figures.continuation
    assert cont is not None and (cont.loss_max_rel_diff or 0.0) <= 1e-6  # measured: 0
    assert load_bundle(tmp_path / "c" / "killed").status == "failed"  # complete, not corrupt
    _no_pickles(tmp_path / "c")
    for part in ("uninterrupted", "killed", "resumed"):
        _valid(tmp_path / "c" / part)


def test_recovery_fails_when_state_is_not_restored(tmp_path: Path) -> None:
    result = _check("recovery", FORGETS_WARMUP, tmp_path / "c", "cpu", k=4, m=4)
    assert not result.passed
    assert _gate(result, "killed after the checkpoint").passed
    loss = _gate(result, "loss curve from step 4")
    assert isinstance(loss, LossCheck) and not loss.passed
    assert loss.max_rel is not None and loss.max_rel > 1e-3


def test_soak_passes_a_steady_workload(tmp_path: Path) -> None:
    # wall-clock latency on a shared test machine follows its neighbours' load, so the
    # drift bound here is loose (a 10 s run cannot bound drift per hour anyway); the
    # drift gate itself is tested on synthetic windows in test_check_parts.py. One thread:
    # two OpenMP threads on two busy cores wait on each other (steps 10-70x slower).
    # Memory: even the windows' RSS floors move by +-2 MiB here (the heap's top), which a
    # 10 s soak turns into +-12 MiB/min, so the bound is 60 MiB/min (10 MiB in the run); a
    # leak the default bound would catch is caught in test_soak_fails_a_leaking_workload
    out = tmp_path / "c"
    result = _check(
        "soak",
        "cnn-infer",
        out,
        "cpu+threads=1",
        duration="10s",
        bounds={"max_drift": 1e6, "max_host_growth": 60.0},
    )
    assert result.passed, result.reason
    host = _gate(result, "host memory growth")
    assert isinstance(host, SlopeGate) and host.passed and host.figure.unit == "MiB/min"
    fig = result.figures.soak
    assert fig is not None and fig.duration_s >= 10 and fig.windows_used >= 8
    drift = fig.latency_drift
    assert drift is not None and drift.low is not None and drift.high is not None
    assert drift.slope is not None and drift.low <= drift.slope <= drift.high
    assert "device_allocated_growth" in fig.not_measured  # the CPU
    _valid(out / "soak")


def test_soak_fails_a_leaking_workload(tmp_path: Path) -> None:
    result = _check(
        "soak", LEAKY, tmp_path / "c", "cpu+threads=1", duration="6s", bounds={"max_drift": 1e6}
    )
    assert not result.passed
    host = _gate(result, "host memory growth")
    assert isinstance(host, SlopeGate) and not host.passed
    assert host.figure.low is not None and host.figure.low > 1.0  # MiB/min; 256 KiB a step
    per_step = host.figure.bytes_per_step
    assert per_step is not None and 0.9 * 2**18 < per_step < 1.1 * 2**18


def test_a_passing_check_ticks_the_verdict_in_compare_and_diff(
    rollback_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cmp"
    request = CompareRequest.from_kwargs(
        **dict(
            workload="mlp-train",
            steps=8,
            target="cpu+bf16",
            repeats=1,
            compliance=False,
            out=str(out),
            checks=(str(rollback_dir),),
        )
    )
    result = api.compare(request)
    ticked = {u.item: u for u in result.verdict.unproven}
    assert ticked["rollback path"].checked
    assert "parity check rollback" in str(ticked["rollback path"].evidence)
    assert not ticked["failure recovery"].checked
    assert (out / "checks" / "rollback" / "check.json").is_file()
    again = api.diff(out / "baseline", out / "target")
    assert again.unproven == result.verdict.unproven
    # the bundles copied elsewhere: ticked only with --checks, then as compare did
    for role in ("baseline", "target"):
        shutil.copytree(out / role, tmp_path / "elsewhere" / role)
    bare = [tmp_path / "elsewhere" / role for role in ("baseline", "target")]
    assert not api.diff(bare[0], bare[1]).unproven[0].checked
    with_checks = api.diff(bare[0], bare[1], checks=[rollback_dir])
    assert with_checks.unproven == result.verdict.unproven
    assert isinstance(_gate(read_result(rollback_dir), "every part ran"), Gate)


def read_result(path: Path) -> CheckResult:
    from parity.bundle import read_doc

    return read_doc(path / "check.json", CheckResult)
