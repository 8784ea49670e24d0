"""The environment manifest: versions, device facts, flags and relevant variables.

Environment variables are captured from an allow-list of prefixes that change how
PyTorch and its backends behave, through the one redactor (``parity.redact``): a
credential-like name or one ``PARITY_REDACT`` marks is recorded redacted, and credentials
inside other values are masked, even inside the allow-list. Nothing else from the
environment is written.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import socket
import sys
from collections.abc import Iterable, Mapping
from functools import cache

import torch

from parity import __version__
from parity.devices.base import Device
from parity.devices.cpu import cpu_model
from parity.model.manifest import CpuInfo, Environment, GlobalFlags, PipFreeze, TorchInfo
from parity.redact import Redactor

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


def relevant_env(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The allow-listed variables, through the redactor (``parity.redact``): a variable
    whose name looks like a credential (``*_TOKEN``, ``*_PWD``, ``*_PASS``, ``*_BEARER``...)
    or that ``PARITY_REDACT`` names is recorded as ``<redacted>``; in any other value,
    credentials are masked (a password in a URL, ``--auth_token=...`` inside
    ``XLA_FLAGS``), so the option string keeps its shape."""
    prefixes = tuple(ALLOWED_PREFIXES) + tuple(extra)
    names = [
        name
        for name in environ
        if any(name == p or (p.endswith("_") and name.startswith(p)) for p in prefixes)
    ]
    return Redactor(environ).environment(environ, names)


@cache
def pip_freeze_digest() -> PipFreeze:
    dists = sorted(
        {
            f"{d.metadata['Name']}=={d.version}".lower()
            for d in importlib.metadata.distributions()
            if d.metadata["Name"]
        }
    )
    return PipFreeze(
        sha256=hashlib.sha256("\n".join(dists).encode()).hexdigest(), packages=len(dists)
    )


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
        pip_freeze=pip_freeze_digest(),
        env=relevant_env(os.environ, device.environment_variables()),
    )
