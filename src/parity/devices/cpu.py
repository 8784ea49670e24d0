"""The CPU: no queue to synchronise, no device allocator; memory is the host's."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import ClassVar

import torch

from parity.devices.base import Device
from parity.model.manifest import FlagValue
from parity.model.metrics import DevicePeaks


class CpuDevice(Device):
    autocast_policy: ClassVar[str | None] = "cpu"
    cluster_resource: ClassVar[str] = "CPU"
    dist_backend: ClassVar[str | None] = "gloo"
    install_hint: ClassVar[str] = "the CPU is always available"
    fork_safe: ClassVar[bool] = True
    steps_on_host: ClassVar[bool] = True

    def is_available(self) -> bool:
        return True

    def count(self) -> int:
        return 1

    def name(self) -> str:
        return cpu_model()

    def synchronize(self) -> None:
        """CPU kernels run on the calling thread and finish before they return."""

    def reset_peak_memory(self) -> None:
        """The host's peak is tracked by ``parity.probes.memory``, not here."""

    def memory_peaks(self) -> DevicePeaks:
        return DevicePeaks()

    def memory_allocated(self) -> int | None:
        """No device allocator: host memory is read by ``parity.probes.memory``."""
        return None

    def total_memory(self) -> int | None:
        """The host's memory (``MemTotal``): a CPU side's tensors live there."""
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    def rng_state(self) -> None:
        """The CPU generator is the host's, saved with every checkpoint anyway."""
        return None

    def for_rank(self, local_rank: int) -> Device:
        """Every rank shares the one CPU."""
        return self

    def ddp_device_ids(self, local_rank: int) -> list[int] | None:
        return None

    def environment_variables(self) -> tuple[str, ...]:
        return ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_", "KMP_", "GOMP_")

    def flags(self) -> dict[str, FlagValue]:
        return {
            "num_threads": torch.get_num_threads(),
            "num_interop_threads": torch.get_num_interop_threads(),
            "mkldnn_enabled": bool(torch.backends.mkldnn.enabled),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
