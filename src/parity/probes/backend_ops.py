"""What a backend itself reports about CPU fallbacks, where it reports anything.

- TorchNeuron (``torch_neuronx``): ``clear_op_tracking()`` before the scanned steps, then
  ``get_fallback_ops()`` and ``get_executed_ops()`` (sets of op names, not counts). These
  are in a public copy of the source, unconfirmed for every release: probed with getattr.
- torch_xla: the metrics counters named ``aten::*`` count ops that ran on the CPU; the
  difference over the scanned steps is reported.

Everything is optional: a backend without these reports ``{"backend": None}`` and the
generic detection in :mod:`parity.probes.ops` is all there is.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

_NEURON_CALLS = ("get_fallback_ops", "get_executed_ops", "clear_op_tracking")


def _module(name: str, *, load: bool) -> ModuleType | None:
    module = sys.modules.get(name)
    if module is None and load:
        try:
            module = importlib.import_module(name)
        except Exception:  # an absent or broken backend simply reports nothing
            return None
    return module


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, dict):
        value = value.keys()
    try:
        return sorted(str(v) for v in value)
    except TypeError:
        return [str(value)]


class BackendProbe:
    """Snapshot a backend's op tracking before the scanned steps; diff it after."""

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.neuron = _module("torch_neuronx", load=device_type == "neuron")
        xla = _module("torch_xla", load=device_type == "xla")
        self.xla_metrics = _module("torch_xla.debug.metrics", load=True) if xla else None
        self.xla_before: dict[str, int] = {}
        self.errors: list[str] = []

    def _call(self, module: ModuleType, name: str) -> Any:
        fn = getattr(module, name, None)
        if not callable(fn):
            return None
        try:
            return fn()
        except Exception as exc:
            self.errors.append(f"{module.__name__}.{name}(): {type(exc).__name__}: {exc}")
            return None

    def _xla_counters(self) -> dict[str, int]:
        met = self.xla_metrics
        if met is None:
            return {}
        names = self._call(met, "counter_names") or []
        counts: dict[str, int] = {}
        for name in names:
            if str(name).startswith("aten::"):
                try:
                    counts[str(name)] = int(met.counter_value(name) or 0)
                except Exception:  # a counter that cannot be read is left out
                    continue
        return counts

    def start(self) -> None:
        if self.neuron is not None:
            self._call(self.neuron, "clear_op_tracking")
        self.xla_before = self._xla_counters()

    def finish(self) -> dict[str, Any]:
        """What the backend reported over the scanned steps."""
        report: dict[str, Any] = {"backend": None, "fallback_ops": [], "executed_ops": None}
        if self.neuron is not None:
            found = [n for n in _NEURON_CALLS if callable(getattr(self.neuron, n, None))]
            report["backend"] = "torch_neuronx"
            report["api"] = found
            report["fallback_ops"] = _names(self._call(self.neuron, "get_fallback_ops"))
            executed = self._call(self.neuron, "get_executed_ops")
            report["executed_ops"] = _names(executed) if executed is not None else None
            if not found:
                report["note"] = "this torch_neuronx exposes no op tracking"
        elif self.xla_metrics is not None:
            after = self._xla_counters()
            report["backend"] = "torch_xla"
            report["fallback_ops"] = sorted(
                name for name, n in after.items() if n > self.xla_before.get(name, 0)
            )
            report["fallback_counts"] = {
                name: after[name] - self.xla_before.get(name, 0) for name in report["fallback_ops"]
            }
        else:
            report["note"] = (
                "the backend reports no fallbacks parity can read: generic detection only"
            )
        if self.errors:
            report["errors"] = self.errors
        return report
