"""The environment manifest: versions, device facts, flags and relevant variables.

Environment variables are captured from an allow-list of prefixes that change how
PyTorch and its backends behave, through the one redactor (``parity.safety.redact``): a
credential-like name or one ``PARITY_REDACT`` marks is recorded redacted, and credentials
inside other values are masked, even inside the allow-list. Nothing else from the
environment is written. The installed distributions are listed by
``parity.probes.packages``.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Iterable, Mapping

import torch

from parity.devices.base import Device
from parity.devices.cpu import cpu_model
from parity.model.codec import decode, loads
from parity.model.manifest import CpuInfo, Environment, GlobalFlags, TorchInfo
from parity.model.placement import Placement
from parity.probes.packages import installed
from parity.safety.redact import Redactor
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


def relevant_env(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The allow-listed variables, through the redactor (``parity.safety.redact``): a variable
    whose name looks like a credential (``*_TOKEN``, ``*_PWD``, ``*_PASS``, ``*_BEARER``...)
    or that ``PARITY_REDACT`` names is recorded as ``<redacted>``; in any other value,
    credentials are masked (a password in a URL, ``--auth_token=...`` inside
    ``XLA_FLAGS``), so the option string keeps its shape."""
    prefixes = tuple(ALLOWED_PREFIXES) + tuple(extra)
    names = [
        name
        for name in environ
        if name != PLACEMENT_VAR
        and any(name == p or (p.endswith("_") and name.startswith(p)) for p in prefixes)
    ]
    return Redactor(environ).environment(environ, names)


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
        placement=placement(),
    )


#: the variable a cluster side's worker finds its node in (``parity.cluster``), as JSON
PLACEMENT_VAR = "PARITY_PLACEMENT"


def placement() -> Placement | None:
    """The node this worker runs on, as the cluster side that started it said."""
    raw = os.environ.get(PLACEMENT_VAR)
    return decode(Placement, loads(raw)) if raw else None
