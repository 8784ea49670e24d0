"""CUDA (and ROCm, which PyTorch exposes as ``cuda`` too)."""

from __future__ import annotations

import os
from typing import ClassVar

import torch

from parity.devices.base import Device
from parity.model.manifest import FlagValue


class CudaDevice(Device):
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

    def enable_determinism(self) -> list[str]:
        # cuBLAS needs a fixed workspace before its first call to be deterministic.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.benchmark = False
        return [
            "CUBLAS_WORKSPACE_CONFIG=" + os.environ["CUBLAS_WORKSPACE_CONFIG"],
            "cudnn.benchmark=False",
        ]

    def matmul_dtype(self, precision: str) -> str:
        if precision == "fp32" and torch.backends.cuda.matmul.allow_tf32:
            return "tf32"
        return super().matmul_dtype(precision)

    def conv_dtype(self, precision: str) -> str:
        """fp32 convolutions run in TF32 while cuDNN's ``allow_tf32`` is on (the default)."""
        if precision == "fp32" and torch.backends.cudnn.allow_tf32:
            return "tf32"
        return super().conv_dtype(precision)

    def environment_variables(self) -> tuple[str, ...]:
        return (
            "CUDA_VISIBLE_DEVICES",
            "CUBLAS_WORKSPACE_CONFIG",
            "NCCL_",
            "PYTORCH_CUDA_ALLOC_CONF",
            "HIP_VISIBLE_DEVICES",
            "TORCH_CUDNN_",
        )

    def flags(self) -> dict[str, FlagValue]:
        return {
            "cuda_version": torch.version.cuda,
            "hip_version": torch.version.hip,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }
