"""What a backend reports of ops it ran elsewhere, through the device adapter
(TorchNeuron's op tracking, torch_xla's counters; nothing for the others)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from parity.devices import get_device
from parity.devices.neuron import NeuronOpTracker
from parity.devices.xla import XlaOpTracker


def test_a_device_without_a_record_reports_nothing() -> None:
    tracker = get_device("cpu").op_tracker()
    tracker.start()
    out = tracker.finish()
    assert out.backend is None and out.fallback_ops == () and out.executed_ops is None
    assert out.note is not None and "generic detection only" in out.note


@pytest.mark.parametrize("kind", [set, list])
def test_torch_neuronx_tracking_is_read_without_clearing_as_names_only(
    monkeypatch: pytest.MonkeyPatch, kind: type
) -> None:
    """The record is deduplicated per process: an op that fell back in the timed steps
    might not be recorded again after a clear, so parity never clears it; a set or a list
    (the source copy's type) gives names only, each once, and never a count."""
    state: dict[str, Any] = {"fallback": kind(["aten::foo"]), "cleared": 0}
    mod = types.ModuleType("torch_neuronx")

    def clear() -> None:
        state["cleared"] += 1
        state["fallback"] = kind()

    mod.clear_op_tracking = clear  # type: ignore[attr-defined]
    mod.get_fallback_ops = lambda: state["fallback"]  # type: ignore[attr-defined]
    mod.get_executed_ops = lambda: {"aten::mm", "aten::add"}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx", mod)
    tracker = get_device("neuron").op_tracker()
    assert isinstance(tracker, NeuronOpTracker)
    tracker.start()
    state["fallback"] = kind(["aten::_unique2", "aten::nonzero", "aten::nonzero", "aten::foo"])
    out = tracker.finish()
    assert state["cleared"] == 0
    assert out.backend == "torch_neuronx" and out.fallback_counts is None
    assert out.note is not None and f"a {kind.__name__} of names: no counts" in out.note
    assert out.fallback_ops == ("aten::_unique2", "aten::foo", "aten::nonzero")
    assert out.executed_ops == ("aten::add", "aten::mm")


def test_a_failing_backend_call_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = types.ModuleType("torch_neuronx")

    def broken() -> set[str]:
        raise RuntimeError("tracking is off")

    mod.get_fallback_ops = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx", mod)
    out = get_device("neuron").op_tracker().finish()
    assert out.fallback_ops == () and out.errors is not None
    assert "torch_neuronx.get_fallback_ops(): RuntimeError: tracking is off" in out.errors


def test_a_neuronx_without_tracking_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", types.ModuleType("torch_neuronx"))
    out = get_device("neuron").op_tracker().finish()
    assert out.backend == "torch_neuronx" and out.fallback_ops == ()
    assert out.note is not None and "no op tracking" in out.note


def test_torch_xla_aten_counters_are_diffed(monkeypatch: pytest.MonkeyPatch) -> None:
    counters = {"aten::nonzero": 2, "aten::_unique2": 1, "CachedCompile": 5}
    met = types.ModuleType("torch_xla.debug.metrics")
    met.counter_names = lambda: list(counters)  # type: ignore[attr-defined]
    met.counter_value = lambda name: counters.get(name)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_xla", types.ModuleType("torch_xla"))
    monkeypatch.setitem(sys.modules, "torch_xla.debug.metrics", met)
    tracker = get_device("xla").op_tracker()
    assert isinstance(tracker, XlaOpTracker)
    tracker.start()
    counters["aten::nonzero"] = 5
    counters["CachedCompile"] = 9
    out = tracker.finish()
    assert out.backend == "torch_xla"
    assert out.fallback_ops == ("aten::nonzero",)
    assert out.fallback_counts == {"aten::nonzero": 3}
