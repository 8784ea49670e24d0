"""AWS Trainium through TorchNeuron's native ``neuron`` device (PrivateUse1).

What differs from the generic adapter (see REFERENCE.md): ``torch.compile`` uses the
``neuron`` backend; the process group is ``neuron``; memory statistics may be nested
(the generic ``find_peak`` handles that); device events record host time, so parity
times with synchronize + ``perf_counter`` everywhere anyway. The backend is autoloaded
through the ``torch.backends`` entry point when torch-neuronx is installed.

Op tracking: ``torch_neuronx.clear_op_tracking()`` before the scanned steps, then
``get_fallback_ops()`` and ``get_executed_ops()`` (sets of op names, not counts). These
are in a public copy of the source, unconfirmed for every release: probed with getattr.
"""

from __future__ import annotations

import os
from typing import ClassVar

from parity.devices.base import Device
from parity.devices.tracking import OpTracker, backend_module, op_names
from parity.model.manifest import FlagValue
from parity.model.ops import BackendReport

_TRACKING_CALLS = ("get_fallback_ops", "get_executed_ops", "clear_op_tracking")


class NeuronOpTracker(OpTracker):
    """TorchNeuron's own record of the ops it ran, and of those it ran on the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.module = backend_module("torch_neuronx", load=True)

    def start(self) -> None:
        if self.module is not None:
            self.call(self.module, "clear_op_tracking")

    def finish(self) -> BackendReport:
        if self.module is None:
            return super().finish()
        found = tuple(n for n in _TRACKING_CALLS if callable(getattr(self.module, n, None)))
        fallback = op_names(self.call(self.module, "get_fallback_ops"))
        executed = self.call(self.module, "get_executed_ops")
        return BackendReport(
            backend="torch_neuronx",
            api=found,
            fallback_ops=fallback,
            executed_ops=op_names(executed) if executed is not None else None,
            note=None if found else "this torch_neuronx exposes no op tracking",
            errors=self._errors(),
        )


class NeuronDevice(Device):
    cluster_resource: ClassVar[str] = "neuron_cores"
    backend_packages: ClassVar[tuple[str, ...]] = (
        "torch-neuronx",
        "libneuronxla",
        "neuronx-cc",
        "neuronx-distributed",
    )
    default_compile_backend: ClassVar[str] = "neuron"
    dist_backend: ClassVar[str | None] = "neuron"
    install_hint: ClassVar[str] = (
        "install torch-neuronx 2.13.x or 2.14.x (Neuron SDK 2.33 or later, the native backend) "
        "on a Trainium instance, and leave TORCH_DEVICE_BACKEND_AUTOLOAD unset"
    )

    def environment_variables(self) -> tuple[str, ...]:
        return ("NEURON_", "TORCH_NEURONX_", "TORCH_DEVICE_BACKEND_AUTOLOAD", "XLA_")

    def op_tracker(self) -> OpTracker:
        return NeuronOpTracker()

    def flags(self) -> dict[str, FlagValue]:
        return {
            "stochastic_rounding": os.environ.get("NEURON_RT_STOCHASTIC_ROUNDING_EN"),
            "disable_fallback_execution": os.environ.get(
                "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"
            ),
        }
