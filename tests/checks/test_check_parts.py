"""The checks' parts without worker processes: durations, slopes, checkpoints, the soak
gates, ticking the verdict's list, and bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from parity import api
from parity.bundle import Bundle
from parity.checks.common import checked_items, parse_duration, slope_ci
from parity.checks.soak import analyse
from parity.cli import app
from parity.spec import WorkloadSpec
from parity.workloads import resolve
from tests.judge.synthetic import side_dir

runner = CliRunner()
MIB = 1 << 20


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("10m", 600), ("1h", 3600), ("1h30m", 5400), ("1.5h", 5400), ("90", 90)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10x", "m", "-5s", "0s", "1h 30m", "s10", "nan"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(api.UsageError):
        parse_duration(text)


def test_slope_interval_covers_the_truth() -> None:
    rng = np.random.default_rng(1)
    x = np.linspace(0, 10, 200)
    fit = slope_ci(x, 2.0 * x + rng.normal(0, 1, x.size))
    assert fit["low"] < 2.0 < fit["high"] and abs(fit["slope"] - 2.0) < 0.2
    flat = slope_ci(x, rng.normal(0, 1, x.size))
    assert flat["low"] < 0.0 < flat["high"]
    assert slope_ci([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])["slope"] is None


def _soak_bundle(windows: list[dict[str, Any]], duration: float) -> Bundle:
    return Bundle(
        path=Path("soak"),
        manifest={"side": {"spec": "cpu"}, "status": "ok"},
        metrics={"soak": {"duration_s": duration, "steps": 1000, "windows": windows}},
    )


def _windows(
    n: int, duration: float, *, drift_per_h: float = 0.0, mib_per_min: float = 0.0
) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        t = (i + 0.5) * duration / n
        lat = 0.01 * (1 + drift_per_h * t / 3600) * float(np.exp(rng.normal(0, 0.02)))
        rss = int(300 * MIB + mib_per_min * MIB * t / 60 + rng.integers(0, 64) * 4096)
        window = {"t_s": t, "end_s": t + duration / n / 2, "steps": 10, "median_s": lat}
        out.append({**window, "host_rss": rss, "device_allocated": None})
    return out


BOUNDS = {"warmup": 0.1, "max_drift": 0.1, "max_host_growth": 1.0, "max_device_growth": 1.0}


def test_soak_gates_on_synthetic_windows() -> None:
    flat = analyse(_soak_bundle(_windows(100, 3600), 3600), **BOUNDS)
    assert all(g["passed"] for g in flat[0])
    assert flat[1]["latency_drift"]["conclusive"] is True  # an hour narrows the interval
    leak = analyse(_soak_bundle(_windows(100, 600, mib_per_min=5), 600), **BOUNDS)
    host = next(g for g in leak[0] if g["name"] == "host memory growth")
    assert host["passed"] is False and 4.5 < host["slope"] < 5.5
    json.dumps(leak, allow_nan=False)  # plain JSON types, as check.json needs
    slow = analyse(_soak_bundle(_windows(100, 3600, drift_per_h=0.5), 3600), **BOUNDS)
    drift = next(g for g in slow[0] if g["name"] == "latency drift")
    assert not drift["passed"] and drift["low"] > 0.1
    short = analyse(_soak_bundle(_windows(5, 10), 10), **BOUNDS)
    assert [g["passed"] for g in short[0]] == [False]


def _check(check: str, sides: dict[str, str], passed: bool, config: str) -> dict[str, Any]:
    return {
        "check": check,
        "passed": passed,
        "sides": sides,
        "workload": {"parts": {"config": config}},
        "evidence": f"{check} evidence",
    }


def test_checked_items_need_a_pass_on_the_verdicts_sides(tmp_path: Path) -> None:
    a = api.load_side(side_dir(tmp_path, "baseline", side="cpu", step_s=0.01, repeats=1)).first
    b = api.load_side(side_dir(tmp_path, "target", side="cpu+bf16", step_s=0.01, repeats=1)).first
    config = a.manifest["workload"]["parts"]["config"]
    checks = [
        _check("rollback", {"target": "cpu+bf16", "baseline": "cpu"}, True, config),
        _check("recovery", {"device": "cpu+bf16"}, False, config),  # failed
        _check("soak", {"device": "cpu"}, True, "other"),  # another side
    ]
    assert checked_items(checks, a, b) == {"rollback path": "rollback evidence"}
    other_arch = [_check("rollback", {"target": "cpu+bf16", "baseline": "cpu"}, True, "x")]
    assert checked_items(other_arch, a, b) == {}
    soak = [_check("soak", {"device": "cpu+bf16"}, True, "any workload")]
    assert checked_items(soak, a, b) == {"sustained load": "soak evidence"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["soak", "mlp-train", "--device", "cpu", "--duration", "10s"], "soak runs inference"),
        (["soak", "cnn-infer", "--device", "cpu", "--duration", "10x"], "is not a duration"),
        (["soak", "cnn-infer", "--device", "cpu", "--warmup", "0.95"], "--warmup"),
        (["soak", "cnn-infer", "--device", "cpu", "--max-drift", "-1"], "--max-drift"),
        (["soak", "cnn-infer", "--device", "tpu9"], "unknown device 'tpu9'"),
        (["rollback", "cnn-infer", "--target", "cpu"], "rollback and recovery checkpoint"),
        (["rollback", "mlp-train", "--target", "cpu", "--k", "0"], "at least 1"),
        (["rollback", "mlp-train", "--target", "cpu+nproc=2"], "drop nproc"),
        (["recovery", "gpt-generate", "--device", "cpu"], "checkpoint training"),
        (["recovery", "nope", "--device", "cpu"], "unknown workload 'nope'"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    result = runner.invoke(app, ["check", *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not out.exists() and not (tmp_path / "parity-runs").exists()


def test_checks_option_refuses_a_directory_without_a_result(tmp_path: Path) -> None:
    a = side_dir(tmp_path, "baseline", side="cpu", step_s=0.01, repeats=1)
    b = side_dir(tmp_path, "target", side="cpu+bf16", step_s=0.01, repeats=1)
    result = runner.invoke(app, ["diff", str(a), str(b), "--checks", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert "not a readable check result" in result.output


def test_full_out_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep")
    args = ["check", "soak", "cnn-infer", "--device", "cpu", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "not empty" in result.output
    assert resolve(WorkloadSpec(name="cnn-infer")).kind == "infer"
