"""The environment manifest: versions, device facts, flags and relevant variables.

Environment variables are captured from an allow-list of prefixes that change how
PyTorch and its backends behave; anything whose name or value looks like a credential
is redacted, even inside the allow-list. Nothing else from the environment is written.
The installed distributions are listed by ``parity.probes.packages``.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from collections.abc import Iterable, Mapping

import torch

from parity.devices.base import Device
from parity.devices.cpu import cpu_model
from parity.model.manifest import CpuInfo, Environment, GlobalFlags, TorchInfo
from parity.probes.packages import installed
from parity.version import __version__

ALLOWED_PREFIXES = (
    "PARITY_",
    "TORCH_",
    "PYTORCH_",
    "OMP_",
    "MKL_",
    "KMP_",
    "GOMP_",
    "OPENBLAS_",
    "CUDA_",
    "CUBLAS_",
    "CUDNN_",
    "NCCL_",
    "NVIDIA_",
    "HIP_",
    "ROCM_",
    "HSA_",
    "NEURON_",
    "XLA_",
    "PJRT_",
    "TPU_",
    "ZE_",
    "ONEAPI_",
    "LD_PRELOAD",
)
_SECRET_NAME = re.compile(
    r"(KEY|SECRET|TOKEN|PASSW|PASSPHRASE|CREDENTIAL|AUTH|SESSION|COOKIE|PRIVATE|SIGNATURE|"
    r"CERT|DSN|CONN)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(AKIA[0-9A-Z]{12,}|ASIA[0-9A-Z]{12,}|gh[pousr]_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|"
    r"sk-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.|"
    r"-----BEGIN [A-Z ]*PRIVATE KEY|://[^/\s:@]+:[^/\s@]+@)"
)
REDACTED = "<redacted>"


def looks_secret(name: str, value: str) -> bool:
    return bool(_SECRET_NAME.search(name) or _SECRET_VALUE.search(value))


def relevant_env(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The allow-listed variables, credential-like ones redacted."""
    prefixes = tuple(ALLOWED_PREFIXES) + tuple(extra)
    out: dict[str, str] = {}
    for name in sorted(environ):
        if not any(name == p or (p.endswith("_") and name.startswith(p)) for p in prefixes):
            continue
        value = environ[name]
        out[name] = REDACTED if looks_secret(name, value) else value
    return out


def collect(device: Device) -> Environment:
    """Everything about this process's environment that can change a result."""
    return Environment(
        parity=__version__,
        python=platform.python_version(),
        python_implementation=platform.python_implementation(),
        executable=sys.executable,
        platform=platform.platform(),
        hostname=socket.gethostname(),
        cpu=CpuInfo(model=cpu_model(), logical_cores=os.cpu_count()),
        torch=TorchInfo(
            version=str(torch.__version__),
            git_version=getattr(torch.version, "git_version", None),
            debug=bool(torch.version.debug),
        ),
        device=device.environment(),
        flags=GlobalFlags(
            deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
            float32_matmul_precision=torch.get_float32_matmul_precision(),
            num_threads=torch.get_num_threads(),
        ),
        pip_freeze=installed(),
        env=relevant_env(os.environ, device.environment_variables()),
    )
