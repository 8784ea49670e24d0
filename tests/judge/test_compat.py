"""The verdict's compatibility section, from each side's ops.json and environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parity.bundle import Bundle
from parity.judge.compat import compatibility, side_summary


def _env(python: str, torch: str, packages: dict[str, str | None]) -> dict[str, Any]:
    return {
        "python": python,
        "torch": {"version": torch},
        "device": {"backend_packages": packages},
    }


def _ops(**over: Any) -> dict[str, Any]:
    src = {"where": "model.py:12", "code": "x = f(x)", "phase": "forward", "count": 2}
    ops: dict[str, Any] = {
        "device": "neuron:0",
        "steps_scanned": 2,
        "custom_ops": [
            {"op": "mylib::fused", "dtypes": ["bfloat16"], "count": 2, "sources": [src]}
        ],
        "unsupported": [
            {
                "op": "aten::_unique2",
                "dtypes": ["int64"],
                "phases": ["forward"],
                "count": 2,
                "sources": [src],
            }
        ],
        "fallbacks": {
            "backend": {"backend": "torch_neuronx", "fallback_ops": ["aten::nonzero"]},
            "device_mismatch": [],
            "copies": [],
        },
        "host_syncs": [
            {"op": "aten::_local_scalar_dense", "where": "train.py:40", "count": 2, "detail": "x"}
        ],
        "graphs": {"explain": {"graph_breaks": 1, "reasons": [{"reason": "r", "where": "m:3"}]}},
        "plain_run": {"ran": True, "failed": True, "error": {"type": "E", "message": "m"}},
        "summary": {
            "unsupported": 1,
            "fallbacks": 1,
            "host_syncs": 2,
            "custom_ops": 1,
            "ops": 40,
            "graph_breaks": 1,
            "fullgraph": False,
            "recompilations": 0,
        },
        "versions": {"python": "3.11.7", "torch": "2.13.0", "backend_packages": {}},
        "clean": False,
    }
    ops.update(over)
    return ops


def _bundle(env: dict[str, Any], ops: dict[str, Any]) -> Bundle:
    return Bundle(path=Path("b"), manifest={"environment": env}, ops=ops)


def test_per_side_findings_and_versions_side_by_side() -> None:
    a = _bundle(_env("3.11.7", "2.13.0", {}), {})
    b = _bundle(_env("3.11.9", "2.13.0", {"torch-neuronx": "2.13.1", "neuronx-cc": None}), _ops())
    comp = compatibility(a, b)
    assert comp["baseline"] == {"scanned": False}
    t = comp["target"]
    assert t["unsupported"] == [
        {"op": "aten::_unique2", "dtypes": ["int64"], "where": "model.py:12"}
    ]
    assert t["custom_ops"][0] == {"op": "mylib::fused", "where": "model.py:12", "test_first": True}
    assert t["fallbacks"]["backend"] == "torch_neuronx"
    assert t["fallbacks"]["ops"] == ["aten::nonzero"]
    assert t["host_syncs"][0]["where"] == "train.py:40"
    assert t["graph_breaks"] == 1 and t["graph_break_reasons"] == [{"reason": "r", "where": "m:3"}]
    assert comp["target_clean"] is False
    rows = {r["name"]: r for r in comp["versions"]}
    assert rows["python"]["mismatch"] is True
    assert rows["torch"]["mismatch"] is False
    assert rows["torch-neuronx"] == {
        "name": "torch-neuronx",
        "baseline": None,
        "target": "2.13.1",
        "mismatch": False,
        "one_side": True,
    }


def test_differing_backend_package_versions_are_a_mismatch() -> None:
    a = _bundle(_env("3.11", "2.13.0", {"torch-neuronx": "2.13.0"}), _ops())
    b = _bundle(_env("3.11", "2.13.0", {"torch-neuronx": "2.13.1"}), _ops(clean=True))
    rows = {r["name"]: r for r in compatibility(a, b)["versions"]}
    assert rows["torch-neuronx"]["mismatch"] is True
    assert compatibility(a, b)["target_clean"] is True


def test_a_scan_that_failed_still_summarises() -> None:
    s = side_summary({"schema_version": 1, "scan_error": {"type": "E"}, "clean": False})
    assert s["scanned"] and s["scan_error"] == {"type": "E"} and s["unsupported"] == []
