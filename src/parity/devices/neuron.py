"""AWS Trainium through TorchNeuron's native ``neuron`` device (PrivateUse1).

What differs from the generic adapter (see REFERENCE.md, "Checked against the 2.33
documentation and a public source copy"):

- names: ``torch.neuron.get_device_name(i)`` says ``neuron:i``; the instance type the
  spec table knows (``trn2``, ``trn2u``, ``trn3``...) is ``get_device_properties(i).name``
  (the generic ``Device.model``), and the logical-core setting
  (``NEURON_LOGICAL_NC_CONFIG``) picks the per-core peak and memory;
- settings: the variables that change what runs are recorded as the process has them
  after ``import torch`` (TorchNeuron sets ``NEURON_LAUNCH_BLOCKING`` at import from its
  build type), an unset one as None, never as its documented default;
- the stack: the native backend's packages (torch-neuronx, neuronx-cc, NKI, nrtpy) and the
  runtime and driver versions the host has, not the XLA-era ``libneuronxla``;
- ``+deterministic`` turns Adaptive Eager Execution (op fusion) off: said in the settings;
- op tracking: ``get_fallback_ops()`` returns op names only (a set, or a list without
  repeats), deduplicated per process: no counts, no phases. parity reads it without
  clearing it, so the names cover the whole process (the timed steps included);
- ``torch.compile(backend="neuron")`` ignores ``mode`` (``honours_compile_mode``).

The backend is autoloaded through the ``torch.backends`` entry point when torch-neuronx
is installed; its runtime reserves every NeuronCore for the first process that starts
it, so nothing here runs in a long-lived parent (``parity.devices.probe``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from parity.devices.base import Device
from parity.devices.tracking import OpTracker, backend_module, op_names
from parity.model.manifest import FlagValue
from parity.model.ops import BackendReport

_TRACKING_CALLS = ("get_fallback_ops", "get_executed_ops")
LNC_VAR = "NEURON_LOGICAL_NC_CONFIG"
#: variables recorded as flags, by the name the flag has (None where unset)
FLAG_VARS = {
    "launch_blocking": "NEURON_LAUNCH_BLOCKING",
    "logical_nc_config_env": LNC_VAR,
    # the compile path only: a failed torch.compile graph raises (default true) or runs eagerly
    "compile_disable_fallback_execution": "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION",
    # eager: "1" limits CPU fallback to unimplemented ops (an execution error then raises)
    "eager_fallback_only_for_unimplemented_ops": (
        "TORCH_NEURONX_FALLBACK_ONLY_FOR_UNIMPLEMENTED_OPS"
    ),
    "stochastic_rounding": "NEURON_RT_STOCHASTIC_ROUNDING_EN",
    "visible_cores": "NEURON_RT_VISIBLE_CORES",
    "num_cores": "NEURON_RT_NUM_CORES",
    "collective_bucketsize_mb": "COLLECTIVE_BUCKETSIZE_IN_MB",
    "collective_min_buckets": "COLLECTIVE_MIN_BUCKETS",
    "disable_neff_cache": "TORCH_NEURONX_DISABLE_NEFF_CACHE",
    "exec_timeout_s": "NEURON_RT_EXEC_TIMEOUT",
}
#: the system packages of the runtime and driver (deb or rpm), beside the pip ones
SYSTEM_PACKAGES = ("aws-neuronx-runtime-lib", "aws-neuronx-collectives", "aws-neuronx-dkms")
DRIVER_VERSION = Path("/sys/module/neuron/version")
ADAPTIVE_EAGER_OFF = (
    "adaptive_eager=off (torch.use_deterministic_algorithms(True) turns TorchNeuron's "
    "Adaptive Eager Execution, its op fusion, off: steps run slower)"
)  # starts with judge.tuning.FUSION_OFF


def logical_nc_config(environ: os._Environ[str] | dict[str, str] | None = None) -> int | None:
    """``NEURON_LOGICAL_NC_CONFIG`` as a whole number (None: unset or not a number)."""
    raw = (os.environ if environ is None else environ).get(LNC_VAR)
    if raw is None or not raw.strip().isdigit():
        return None
    return int(raw.strip())


class NeuronOpTracker(OpTracker):
    """TorchNeuron's own record of the ops it ran on the CPU: names only.

    Read, never cleared: the record is deduplicated per process, so an op that fell back
    before the scanned steps may not be recorded again after a clear."""

    def __init__(self) -> None:
        super().__init__()
        self.module = backend_module("torch_neuronx", load=True)

    def finish(self) -> BackendReport:
        if self.module is None:
            return super().finish()
        found = tuple(n for n in _TRACKING_CALLS if callable(getattr(self.module, n, None)))
        if "get_fallback_ops" not in found:
            return BackendReport(
                backend="torch_neuronx",
                api=found,
                note="this torch_neuronx exposes no op tracking: parity's own scan only",
                errors=self._errors(),
            )
        fallback = self.call(self.module, "get_fallback_ops")
        executed = self.call(self.module, "get_executed_ops")
        return BackendReport(
            backend="torch_neuronx",
            api=found,
            fallback_ops=op_names(fallback),
            executed_ops=op_names(executed) if executed is not None else None,
            note=(
                f"op names the backend recorded in this process (a {type(fallback).__name__} "
                "of names: no counts, no phases)"
            ),
            errors=self._errors(),
        )


class NeuronDevice(Device):
    cluster_resource: ClassVar[str] = "neuron_cores"
    backend_packages: ClassVar[tuple[str, ...]] = ("torch-neuronx", "neuronx-cc", "nki", "nrtpy")
    default_compile_backend: ClassVar[str] = "neuron"
    dist_backend: ClassVar[str | None] = "neuron"
    #: TorchNeuron registers CUDA's autocast op lists for ``neuron`` (source copy)
    autocast_policy: ClassVar[str | None] = "cuda"
    #: the source copy registers its CPU fallback as the catch-all PrivateUse1 kernel
    catch_all_runs_on_cpu: ClassVar[bool] = True
    #: ``torch.compile(backend="neuron", mode=...)`` warns and ignores the mode
    honours_compile_mode: ClassVar[bool] = False
    install_hint: ClassVar[str] = (
        "install torch-neuronx 2.13.x or 2.14.x (Neuron SDK 2.33 or later, the native backend) "
        "on a Trn2 or Trn3 instance, and leave TORCH_DEVICE_BACKEND_AUTOLOAD unset"
    )

    def environment_variables(self) -> tuple[str, ...]:
        return ("NEURON_", "TORCH_NEURONX_", "TORCH_DEVICE_BACKEND_AUTOLOAD", "COLLECTIVE_")

    def op_tracker(self) -> OpTracker:
        return NeuronOpTracker()

    def logical_nc_config(self) -> int | None:
        return logical_nc_config()

    def enable_determinism(self) -> list[str]:
        return [ADAPTIVE_EAGER_OFF]

    def flags(self) -> dict[str, FlagValue]:
        """The settings as this process has them after ``import torch`` (and TorchNeuron's
        own defaults at import); None for a variable that is unset."""
        return {flag: os.environ.get(var) for flag, var in FLAG_VARS.items()}

    def package_versions(self) -> dict[str, str | None]:
        """The pip packages of the native stack, then the runtime, collectives and driver
        the host has (system packages; the driver's loaded module)."""
        found = super().package_versions()
        for name in SYSTEM_PACKAGES:
            found[name] = system_package_version(name)
        found["neuron-driver (loaded)"] = _read(DRIVER_VERSION)
        return found


def system_package_version(name: str) -> str | None:
    """A deb or rpm package's version through the package manager (None: not there)."""
    for argv in (
        ("dpkg-query", "-W", "-f=${Version}", name),
        ("rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", name),
    ):
        if shutil.which(argv[0]) is None:
            continue
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        text = done.stdout.strip()
        if done.returncode == 0 and text and "not installed" not in text:
            return text
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
