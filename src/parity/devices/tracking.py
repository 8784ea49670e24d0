"""What a backend itself reports about the ops it ran elsewhere (CPU fallbacks).

The op scan (``parity.probes.scan``) asks the side's device adapter for an
:class:`OpTracker` (``Device.op_tracker()``), calls ``start()`` before the scanned steps
and ``finish()`` after them. The generic tracker reports nothing, so the scan's own
detection (outputs on another device, copies) is all there is; an adapter whose backend
keeps such a record (TorchNeuron's op tracking, torch_xla's ``aten::*`` counters)
returns a tracker that reads it. Every backend call is probed with ``getattr`` and
guarded: a missing or failing call is reported in ``errors``, never raised.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from types import ModuleType

from parity.model.ops import BackendReport

GENERIC_NOTE = "the backend reports no fallbacks parity can read: generic detection only"


def backend_module(name: str, *, load: bool) -> ModuleType | None:
    """An already imported backend module, or (``load``) import it; None if absent."""
    module = sys.modules.get(name)
    if module is None and load:
        try:
            module = importlib.import_module(name)
        except Exception:  # an absent or broken backend simply reports nothing
            return None
    return module


def op_names(value: object) -> tuple[str, ...]:
    """Sorted op names, each once, from whatever a backend returns (a set, a dict, a list)."""
    if value is None:
        return ()
    if isinstance(value, dict):
        value = value.keys()
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return tuple(sorted({str(v) for v in value}))
    return (str(value),)


class OpTracker:
    """The generic tracker: the backend reports nothing parity can read."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def call(self, module: ModuleType, name: str) -> object:
        """``module.name()`` if it exists; a raised error is recorded and gives None."""
        fn = getattr(module, name, None)
        if not callable(fn):
            return None
        try:
            result: object = fn()
        except Exception as exc:
            self.errors.append(f"{module.__name__}.{name}(): {type(exc).__name__}: {exc}")
            return None
        return result

    def start(self) -> None:
        """Before the scanned steps: clear or snapshot the backend's record."""

    def finish(self) -> BackendReport:
        """After the scanned steps: what the backend reported over them."""
        return BackendReport(note=GENERIC_NOTE, errors=self._errors())

    def _errors(self) -> tuple[str, ...] | None:
        return tuple(self.errors) if self.errors else None
