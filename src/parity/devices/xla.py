"""torch_xla's ``xla`` device: only its op tracking differs from the generic adapter.

torch_xla's metrics counters named ``aten::*`` count ops that ran on the CPU; the
difference over the scanned steps is what the backend reports as fallbacks.
"""

from __future__ import annotations

from types import ModuleType
from typing import ClassVar

from parity.devices.base import Device
from parity.devices.tracking import OpTracker, backend_module
from parity.model.ops import BackendReport


class XlaOpTracker(OpTracker):
    """Diffs torch_xla's ``aten::*`` counters over the scanned steps."""

    def __init__(self) -> None:
        super().__init__()
        xla = backend_module("torch_xla", load=True)
        self.metrics = backend_module("torch_xla.debug.metrics", load=True) if xla else None
        self.before: dict[str, int] = {}

    def counters(self, metrics: ModuleType) -> dict[str, int]:
        names = self.call(metrics, "counter_names") or []
        counts: dict[str, int] = {}
        for name in names if isinstance(names, list | tuple | set) else ():
            if str(name).startswith("aten::"):
                try:
                    counts[str(name)] = int(metrics.counter_value(name) or 0)
                except Exception:  # a counter that cannot be read is left out
                    continue
        return counts

    def start(self) -> None:
        if self.metrics is not None:
            self.before = self.counters(self.metrics)

    def finish(self) -> BackendReport:
        if self.metrics is None:
            return super().finish()
        after = self.counters(self.metrics)
        grown = {
            n: c - self.before.get(n, 0) for n, c in after.items() if c > self.before.get(n, 0)
        }
        return BackendReport(
            backend="torch_xla",
            fallback_ops=tuple(sorted(grown)),
            fallback_counts=dict(sorted(grown.items())),
            errors=self._errors(),
        )


class XlaDevice(Device):
    backend_packages: ClassVar[tuple[str, ...]] = ("torch-xla",)
    #: torch_xla's own torch.compile backend (inductor does not target XLA devices)
    default_compile_backend: ClassVar[str] = "openxla"
    install_hint: ClassVar[str] = "install torch_xla matching your PyTorch version"

    def op_tracker(self) -> OpTracker:
        return XlaOpTracker()
