"""The checks' parts without worker processes: durations, slopes, checkpoints, the soak
gates, ticking the verdict's list, and bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from parity import api
from parity.bundle import Bundle
from parity.checks.common import checked_items, parse_duration
from parity.checks.soak import analyse
from parity.cli import app
from parity.runner.checkpoint import (
    CheckpointError,
    _decode,
    _encode,
    load_checkpoint,
    save_checkpoint,
)
from parity.runner.soak import Reservoir
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


def test_reservoir_is_a_bounded_systematic_sample() -> None:
    r = Reservoir(cap=8)
    for i in range(100):
        r.add(float(i), float(i))
    assert r.n <= 8 and r.stride == 16
    assert list(r.t[: r.n]) == [0.0, 16.0, 32.0, 48.0, 64.0, 80.0, 96.0]


def test_state_encoding_round_trips_without_pickle() -> None:
    state = {
        "state": {0: {"step": torch.tensor(3.0), "buf": torch.ones(2, 2)}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": math.inf, "params": [0]}],
    }
    tensors: dict[str, torch.Tensor] = {}
    encoded = _encode(state, "optimizer", tensors)
    text = json.dumps(encoded, allow_nan=False)  # plain JSON
    back = _decode(json.loads(text), tensors)
    assert back["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["param_groups"][0]["eps"] == math.inf
    assert torch.equal(back["state"][0]["buf"], torch.ones(2, 2))
    with pytest.raises(CheckpointError, match="without pickle"):
        _encode({"f": object()}, "x", {})


def _trained(steps: int, seed: int = 0) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for i in range(steps):
        _step(model, opt, i)
    return model, opt


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer, i: int) -> None:
    g = torch.Generator().manual_seed(100 + i)
    opt.zero_grad()
    model(torch.randn(16, 4, generator=g)).pow(2).mean().backward()  # type: ignore[no-untyped-call]
    opt.step()


def test_checkpoint_resumes_bit_for_bit(tmp_path: Path) -> None:
    model, opt = _trained(3)
    cpu = torch.device("cpu")
    path = save_checkpoint(
        tmp_path / "ck", model, opt, step=3, losses=[1.0, None, 0.5], fingerprint="f",
        side="cpu", device=cpu,
    )  # fmt: skip
    assert sorted(p.name for p in path.iterdir()) == [
        "checkpoint.json",
        "model.safetensors",
        "optimizer.safetensors",
    ]
    fresh, fresh_opt = _trained(0, seed=7)
    ck = load_checkpoint(path, fresh, fresh_opt, fingerprint="f", device=cpu)
    assert (ck.step, ck.losses) == (3, [1.0, None, 0.5])
    for i in (3, 4):
        _step(model, opt, i)
        _step(fresh, fresh_opt, i)
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(CheckpointError, match="another workload"):
        load_checkpoint(path, fresh, fresh_opt, fingerprint="g", device=cpu)
    with pytest.raises(CheckpointError, match="already exists"):
        save_checkpoint(path, model, opt, step=5, losses=[], fingerprint="f", side="cpu",
                        device=cpu)  # fmt: skip
    data = bytearray((path / "optimizer.safetensors").read_bytes())
    data[-1] ^= 1
    (path / "optimizer.safetensors").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256"):
        load_checkpoint(path, fresh, fresh_opt, fingerprint="f", device=cpu)


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
