"""Numerical parity end to end: the fp64 gate, the first diverging module, precision
profiles. Each test runs real compares (fresh processes, the fp64 reference)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_cli

pytestmark = pytest.mark.slow


def compare(tmp_path: Path, workload: str, target: str, *extra: str) -> dict[str, Any]:
    out = tmp_path / target.replace("+", "_")
    cmp = run_cli(
        "compare",
        workload,
        "--baseline",
        "cpu",
        "--target",
        target,
        "--repeats",
        "1",
        "--no-compliance",
        "--steps",
        "6",
        "--out",
        str(out),
        "--json",
        *extra,
    )
    assert cmp.returncode in (0, 1), cmp.stderr
    verdict: dict[str, Any] = json.loads(cmp.stdout)
    assert (out / "reference" / "capture.safetensors").is_file()
    return verdict


def test_a_perturbed_module_is_named_as_the_first_divergence(tmp_path: Path) -> None:
    v = compare(tmp_path, f"{FIXTURES / 'workloads.py'}:PerturbOnOneThread", "cpu+threads=1")
    layers = v["numerics"]["layers"]
    assert layers["first_divergence"] == "body.2"
    row = layers["first_divergence_row"]
    assert row["target_error"] > 100 * max(row["baseline_error"], 1e-9)
    earlier = [r for r in layers["table"] if r["leaf"]]
    earlier = earlier[: [r["module"] for r in earlier].index("body.2")]
    assert earlier and all(r["excess"] <= 1 for r in earlier)


def test_fp32_with_another_thread_count_passes_the_gate(tmp_path: Path) -> None:
    v = compare(tmp_path, "gpt-train", "cpu+threads=1")
    n = v["numerics"]
    assert n["reference"]["available"] and n["precision"] == "fp32" and n["k"] == 2
    assert n["passed"] and v["quality"]["passed"] and v["passed"]
    assert {g["name"] for g in n["gates"]} == {
        "output logits",
        "output loss",
        "gradients (first backward)",
    }
    assert n["layers"]["first_divergence"] is None


def test_bf16_matmul_emulation_is_told_apart_by_the_per_layer_errors(tmp_path: Path) -> None:
    emulated = compare(tmp_path, "gpt-train", "cpu+emulate=matmul-bf16")["numerics"]
    plain = compare(tmp_path, "gpt-train", "cpu+threads=1")["numerics"]
    first = emulated["layers"]["first_divergence"]
    assert first is not None and first.endswith(("qkv", "proj", "mlp.0", "mlp.2", "head"))
    worst = max(r["target_error"] for r in emulated["layers"]["table"])
    assert worst > 1e-4 > max(r["target_error"] for r in plain["layers"]["table"])
    assert emulated["precision"] == "bf16" and emulated["k"] == 3


def test_gpt_train_fp32_against_bf16_gives_curves_and_the_layer_table(tmp_path: Path) -> None:
    v = compare(tmp_path, "gpt-train", "cpu+bf16", "--target-loss", "5.4")
    loss = next(c for c in v["quality"]["checks"] if c["kind"] == "loss")
    assert loss["max_rel"] > 0 and loss["final_ratio"] == pytest.approx(1, abs=0.05)
    table = v["numerics"]["layers"]["table"]
    assert len(table) > 10 and all("target_error" in r for r in table)
    grads = next(g for g in v["numerics"]["gates"] if g["name"].startswith("gradients"))
    assert grads["worst_parameters"] and grads["rmse_target"] > grads["rmse_baseline"]
    conv = v["quality"]["convergence"]
    assert set(conv) == {"baseline", "target"}
    assert conv["baseline"]["runs"][0]["steps"] is None or conv["baseline"]["runs"][0]["time_s"]


def test_diff_finds_the_reference_beside_the_sides(tmp_path: Path) -> None:
    v = compare(tmp_path, "mlp-train", "cpu+bf16")
    out = tmp_path / "cpu_bf16"
    d = run_cli("diff", str(out / "baseline"), str(out / "target"), "--json")
    assert json.loads(d.stdout)["numerics"] == v["numerics"]
    moved = tmp_path / "elsewhere"
    (out / "baseline").rename(moved)
    d = run_cli("diff", str(moved), str(out / "target"), "--json")
    assert json.loads(d.stdout)["numerics"]["reference"]["available"]  # found beside target
