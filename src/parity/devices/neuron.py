"""AWS Trainium through TorchNeuron's native ``neuron`` device (PrivateUse1).

What differs from the generic adapter (see REFERENCE.md): ``torch.compile`` uses the
``neuron`` backend; the process group is ``neuron``; memory statistics may be nested
(the generic ``find_peak`` handles that); device events record host time, so parity
times with synchronize + ``perf_counter`` everywhere anyway. The backend is autoloaded
through the ``torch.backends`` entry point when torch-neuronx is installed.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from parity.devices.base import Device


class NeuronDevice(Device):
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

    def flags(self) -> dict[str, Any]:
        return {
            "stochastic_rounding": os.environ.get("NEURON_RT_STOCHASTIC_ROUNDING_EN"),
            "disable_fallback_execution": os.environ.get(
                "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"
            ),
        }
