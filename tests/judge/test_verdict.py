from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from parity.bundle import SCHEMA_VERSION, Bundle, load_bundle, write_json
from parity.errors import ContractError
from parity.judge.verdict import judge
from parity.workloads.frozen import fingerprint

PARTS = {
    "config": "c",
    "weights": "w",
    "data": "d",
    "batch_size": 8,
    "seq_len": 16,
    "steps": 20,
    "seed": 0,
    "quality": "q",
}


def bundle(
    path: Path,
    *,
    side: str = "cpu",
    status: str = "ok",
    parts: dict[str, Any] | None = None,
    losses: list[float] | None = None,
    out: torch.Tensor | None = None,
    step_s: float = 0.01,
    env: dict[str, Any] | None = None,
) -> Bundle:
    from parity.spec import parse_side

    path.mkdir(parents=True)
    parts = {**PARTS, **(parts or {})}
    write_json(
        path / "manifest.json",
        {
            "schema_version": SCHEMA_VERSION,
            "status": status,
            "reason": None if status == "ok" else "planted",
            "side": parse_side(side).to_dict(),
            "workload": {
                "fingerprint": fingerprint(parts),
                "parts": parts,
                "description": {"name": "w", "size": "tiny", "kind": "train"},
            },
            "environment": env or {"torch": {"version": "2.13.0"}},
        },
    )
    if status == "ok":
        samples = [step_s * 10] + [step_s * (1 + 0.01 * (i % 3)) for i in range(30)]
        write_json(
            path / "metrics.json",
            {
                "step_samples_s": samples,
                "steady_from_step": 1,
                "summary": {"median": step_s},
                "throughput": {"samples_per_s": 8 / step_s},
                "memory": {"steps": {"device": {"allocated": None}, "host_peak_rss": 1}},
                "phases": {"first_step_s": step_s * 10},
            },
        )
        write_json(path / "numerics.json", {"losses": losses or [2.0, 1.5, 1.0]})
        save_file(
            {"logits": out if out is not None else torch.ones(4, 3)},
            str(path / "numerics.safetensors"),
        )
    return load_bundle(path)


def test_same_results_pass(tmp_path: Path) -> None:
    v = judge(bundle(tmp_path / "a"), bundle(tmp_path / "b", side="cpu+bf16", step_s=0.005))
    assert v.passed and v.exit_code == 0
    assert v.config_differences == [{"setting": "precision", "baseline": "fp32", "target": "bf16"}]
    assert v.speed is not None and v.speed["verdict"] == "faster"
    assert v.speed["ratio"] == pytest.approx(0.5, rel=0.05)


def test_quality_failure_fails_the_gate(tmp_path: Path) -> None:
    v = judge(
        bundle(tmp_path / "a"),
        bundle(tmp_path / "b", losses=[2.0, 1.5, 1.3], out=torch.ones(4, 3) * 1.1),
    )
    assert not v.passed and v.exit_code == 1
    failing = {c["name"] for c in v.quality["checks"] if not c["passed"]}
    assert failing == {"loss curve", "output logits"}


def test_fp32_tolerance_is_tighter_than_bf16(tmp_path: Path) -> None:
    off = torch.ones(4, 3) * 1.01
    assert not judge(bundle(tmp_path / "a"), bundle(tmp_path / "b", out=off)).passed
    assert judge(bundle(tmp_path / "c"), bundle(tmp_path / "d", side="cpu+bf16", out=off)).passed


def test_failed_side_fails_with_reason(tmp_path: Path) -> None:
    v = judge(bundle(tmp_path / "a"), bundle(tmp_path / "b", status="failed"))
    assert v.exit_code == 1
    assert "target failed: planted" in v.gates[0]["detail"]


def test_different_workloads_are_refused_naming_fields(tmp_path: Path) -> None:
    a = bundle(tmp_path / "a")
    b = bundle(tmp_path / "b", parts={"steps": 30, "seed": 1})
    with pytest.raises(ContractError, match=r"steps, seed differ.*--allow-diff steps="):
        judge(a, b)
    with pytest.raises(ContractError, match="seed differ"):
        judge(a, b, allow={"steps": "shorter run"})
    v = judge(a, b, allow={"steps": "shorter run", "seed": "reseeded"})
    assert v.fairness["allowed"] == {"steps": "shorter run", "seed": "reseeded"}
    assert not v.fairness["fingerprint_match"]


def test_environment_differences_are_listed(tmp_path: Path) -> None:
    v = judge(
        bundle(tmp_path / "a", env={"torch": {"version": "2.13.0"}}),
        bundle(tmp_path / "b", env={"torch": {"version": "2.14.0"}}),
    )
    assert {"field": "torch", "baseline": "2.13.0", "target": "2.14.0"} in v.environment_differences


def test_tokens_are_reported_not_gated(tmp_path: Path) -> None:
    a = bundle(tmp_path / "a", out=torch.tensor([[1, 2, 3], [4, 5, 6]]))
    b = bundle(tmp_path / "b", out=torch.tensor([[1, 2, 9], [4, 5, 6]]))
    v = judge(a, b)
    tokens = next(c for c in v.quality["checks"] if c["kind"] == "tokens")
    assert tokens["agreement"] == pytest.approx(5 / 6)
    assert tokens["first_difference"] == [2, None]
    assert v.passed
