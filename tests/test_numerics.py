"""Numerical parity end to end: the fp64 gate, the first diverging module, precision
profiles. Each test runs real compares (fresh processes, the fp64 reference) through the
Python API."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from parity import api
from parity.model.codec import encode
from parity.request import CompareRequest
from tests.conftest import FIXTURES
from tests.fixtures.workloads import ODD_THREADS

pytestmark = pytest.mark.slow


def compare(
    tmp_path: Path, workload: str, target: str, baseline: str = "cpu", **extra: Any
) -> dict[str, Any]:
    out = tmp_path / target.replace("+", "_").replace("=", "-")
    options = dict(
        workload=workload,
        baseline=baseline,
        target=target,
        repeats=1,
        compliance=False,
        report=False,  # these tests read the verdict and bundles: no plots drawn
        steps=6,
        out=str(out),
        **extra,
    )
    verdict = api.compare(CompareRequest.from_kwargs(**options)).verdict
    assert (out / "reference" / "capture.safetensors").is_file()
    assert (out / "reference" / "numerics.safetensors").is_file()  # the whole run
    result: dict[str, Any] = json.loads(json.dumps(encode(verdict)))
    return result


@pytest.mark.skipif(
    (os.cpu_count() or 1) < ODD_THREADS, reason=f"needs {ODD_THREADS} logical cores"
)
def test_a_perturbed_module_is_named_as_the_first_divergence(tmp_path: Path) -> None:
    workload = f"{FIXTURES / 'workloads.py'}:PerturbOnThreadCount"
    v = compare(tmp_path, workload, f"cpu+threads={ODD_THREADS}", baseline="cpu+threads=1")
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
        "loss trajectory against fp64",
        "eval_logits against fp64",
        "first forward logits against fp64",
        "first forward loss against fp64",
        "gradients (first backward) against fp64",
        "modules against fp64",
    }
    assert "expected" not in n  # an fp32 target: the baseline is the comparator
    assert n["layers"]["first_divergence"] is None


def test_bf16_matmul_emulation_is_explained_by_its_expected_errors(tmp_path: Path) -> None:
    emulated = compare(tmp_path, "gpt-train", "cpu+emulate=matmul-bf16")
    plain = compare(tmp_path, "gpt-train", "cpu+threads=1")["numerics"]
    n = emulated["numerics"]
    assert n["precision"] == "bf16" and n["k"] == 3 and n["expected"]["available"]
    table = n["layers"]["table"]
    worst = max(r["target_error"] for r in table)
    assert worst > 1e-4 > max(r["target_error"] for r in plain["layers"]["table"])
    # the CPU's emulation is the target's: its errors are the expected ones, none diverges
    assert all(r["expected_error"] == pytest.approx(r["target_error"]) for r in table)
    assert n["layers"]["first_divergence"] is None
    held = [f["code"] for f in emulated["findings"]]
    assert "decision.withheld-emulated" in held and emulated["speed"] is None


def test_gpt_train_fp32_against_bf16_gives_curves_and_the_layer_table(tmp_path: Path) -> None:
    v = compare(tmp_path, "gpt-train", "cpu+bf16", target_loss=5.4)
    loss = next(c for c in v["quality"]["checks"] if c["kind"] == "loss")
    assert loss["max_rel"] > 0 and loss["final_ratio"] == pytest.approx(1, abs=0.05)
    table = v["numerics"]["layers"]["table"]
    assert len(table) > 10 and all("target_error" in r for r in table)
    grads = next(g for g in v["numerics"]["gates"] if g["name"].startswith("gradients"))
    assert grads["worst_parameters"] and grads["rmse_target"] > grads["rmse_baseline"]
    assert grads["comparator"] == "expected" and grads["passed"]
    conv = v["quality"]["convergence"]
    assert set(conv) == {"baseline", "target"}
    assert conv["baseline"]["runs"][0]["steps"] is None or conv["baseline"]["runs"][0]["time_s"]


def test_diff_finds_the_references_beside_the_sides(tmp_path: Path) -> None:
    v = compare(tmp_path, "mlp-train", "cpu+bf16")
    out = tmp_path / "cpu_bf16"
    d = json.loads(json.dumps(encode(api.diff(out / "baseline", out / "target"))))
    assert d["numerics"] == v["numerics"] and d["numerics"]["expected"]["available"]
    moved = tmp_path / "elsewhere"
    (out / "baseline").rename(moved)
    d = json.loads(json.dumps(encode(api.diff(moved, out / "target"))))
    assert d["numerics"]["reference"]["available"]  # found beside target
