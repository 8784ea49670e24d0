"""Backend fallback reports, probed with getattr (TorchNeuron, torch_xla)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from parity.probes.backend_ops import BackendProbe


def test_no_backend_reports_nothing() -> None:
    report = BackendProbe("cpu")
    report.start()
    out = report.finish()
    assert out["backend"] is None and out["fallback_ops"] == []
    assert "generic detection only" in out["note"]


def test_torch_neuronx_tracking_is_cleared_then_read(monkeypatch: pytest.MonkeyPatch) -> None:
    state: dict[str, Any] = {"fallback": {"aten::foo"}, "cleared": 0}
    mod = types.ModuleType("torch_neuronx")

    def clear() -> None:
        state["cleared"] += 1
        state["fallback"] = set()

    mod.clear_op_tracking = clear  # type: ignore[attr-defined]
    mod.get_fallback_ops = lambda: state["fallback"]  # type: ignore[attr-defined]
    mod.get_executed_ops = lambda: {"aten::mm", "aten::add"}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx", mod)
    probe = BackendProbe("neuron")
    probe.start()
    state["fallback"] = {"aten::_unique2", "aten::nonzero"}
    out = probe.finish()
    assert state["cleared"] == 1
    assert out["backend"] == "torch_neuronx"
    assert out["fallback_ops"] == ["aten::_unique2", "aten::nonzero"]
    assert out["executed_ops"] == ["aten::add", "aten::mm"]


def test_a_neuronx_without_tracking_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", types.ModuleType("torch_neuronx"))
    out = BackendProbe("neuron").finish()
    assert out["backend"] == "torch_neuronx" and out["fallback_ops"] == []
    assert "no op tracking" in out["note"]


def test_torch_xla_aten_counters_are_diffed(monkeypatch: pytest.MonkeyPatch) -> None:
    counters = {"aten::nonzero": 2, "aten::_unique2": 1, "CachedCompile": 5}
    met = types.ModuleType("torch_xla.debug.metrics")
    met.counter_names = lambda: list(counters)  # type: ignore[attr-defined]
    met.counter_value = lambda name: counters.get(name)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_xla", types.ModuleType("torch_xla"))
    monkeypatch.setitem(sys.modules, "torch_xla.debug.metrics", met)
    probe = BackendProbe("xla")
    probe.start()
    counters["aten::nonzero"] = 5
    counters["CachedCompile"] = 9
    out = probe.finish()
    assert out["backend"] == "torch_xla"
    assert out["fallback_ops"] == ["aten::nonzero"]
    assert out["fallback_counts"] == {"aten::nonzero": 3}
