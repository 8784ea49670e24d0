"""CUDA (and ROCm, which PyTorch exposes as ``cuda`` too).

fp32 work on CUDA may run in TF32, and matmuls and convolutions are set apart: cuBLAS
matmuls are IEEE fp32 by default, cuDNN convolutions TF32. The adapter records both
modes (``matmul_fp32_math``, ``conv_fp32_math``) so the numerics gate can judge an fp32
side by the format its work really ran in (``model.precision.effective_precision``).
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

import torch

from parity.devices.base import Device
from parity.model.manifest import FlagValue


class CudaDevice(Device):
    autocast_policy: ClassVar[str | None] = "cuda"
    backend_packages: ClassVar[tuple[str, ...]] = (
        "nvidia-cuda-runtime-cu12",
        "nvidia-cudnn-cu12",
        "nvidia-nccl-cu12",
        "nvidia-cuda-runtime",
        "nvidia-cudnn-cu13",
        "pytorch-triton-rocm",
        "triton",
    )
    dist_backend: ClassVar[str | None] = "nccl"
    install_hint: ClassVar[str] = (
        "install a CUDA (or ROCm) build of PyTorch on a machine with a GPU and a driver"
    )
    #: CUDA starts lazily in the process that first touches it: safe in a fork whose
    #: parent never did
    fork_safe: ClassVar[bool] = True

    def enable_determinism(self) -> list[str]:
        # cuBLAS needs a fixed workspace before its first call to be deterministic.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.benchmark = False
        return [
            "CUBLAS_WORKSPACE_CONFIG=" + os.environ["CUBLAS_WORKSPACE_CONFIG"],
            "cudnn.benchmark=False",
        ]

    def matmul_dtype(self, precision: str) -> str:
        if precision == "fp32":
            return "tf32" if fp32_math("matmul") == "tf32" else "fp32"
        return super().matmul_dtype(precision)

    def conv_dtype(self, precision: str) -> str:
        """fp32 convolutions run in TF32 while cuDNN's TF32 mode is on (the default)."""
        if precision == "fp32":
            return "tf32" if fp32_math("conv") == "tf32" else "fp32"
        return super().conv_dtype(precision)

    def environment_variables(self) -> tuple[str, ...]:
        return (
            "CUDA_VISIBLE_DEVICES",
            "CUBLAS_WORKSPACE_CONFIG",
            "NCCL_",
            "PYTORCH_CUDA_ALLOC_CONF",
            "HIP_VISIBLE_DEVICES",
            "TORCH_CUDNN_",
            "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        )

    def flags(self) -> dict[str, FlagValue]:
        return {
            "cuda_version": torch.version.cuda,
            "hip_version": torch.version.hip,
            "matmul_fp32_math": fp32_math("matmul"),
            "conv_fp32_math": fp32_math("conv"),
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "float32_matmul_precision": _float32_matmul_precision(),
        }


Fp32Math = Literal["tf32", "ieee", "unknown"]

#: where each op's fp32 mode is set in ``torch.backends`` (the ``fp32_precision`` API of
#: PyTorch 2.9 and later), most specific first; "none" at one level defers to the next
_PRECISION_LEVELS: dict[str, tuple[tuple[str, ...], ...]] = {
    "matmul": (("cuda", "matmul"), ()),
    "conv": (("cudnn", "conv"), ("cudnn",), ()),
}
#: the legacy ``allow_tf32`` switch, read when no level decides
_LEGACY: dict[str, tuple[str, ...]] = {"matmul": ("cuda", "matmul"), "conv": ("cudnn",)}


def fp32_math(op: Literal["matmul", "conv"], backends: Any = None) -> Fp32Math:
    """The format fp32 ``op`` runs in: "tf32", "ieee", or "unknown" where PyTorch refuses
    to say (its legacy getters raise once the legacy and new APIs were mixed).

    ``backends`` defaults to ``torch.backends``; tests pass a stub of the same shape."""
    root = torch.backends if backends is None else backends
    if op == "matmul" and _env_true("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"):
        return "tf32"  # cuBLAS then runs fp32 matmuls in TF32 whatever the flags say
    for path in _PRECISION_LEVELS[op]:
        value = getattr(_walk(root, path), "fp32_precision", None)
        if value == "tf32":
            return "tf32"
        if value == "ieee":
            return "ieee"
    try:
        legacy = _walk(root, _LEGACY[op]).allow_tf32
    except (RuntimeError, AttributeError):
        return "unknown"
    return "tf32" if legacy else "ieee"


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").upper() in ("1", "ON", "YES", "TRUE", "Y")


def _walk(node: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        node = getattr(node, name, None)
    return node


def _float32_matmul_precision() -> str:
    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:  # raised once the legacy and new TF32 APIs were mixed
        return "unknown"
