"""The CUDA adapter's record of TF32 use, on the CPU: stubbed ``torch.backends`` trees and
PyTorch's own flags, which a CPU build keeps too."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from parity.devices.cuda import CudaDevice, fp32_math


def _backends(
    matmul: str | None = "none",
    conv: str | None = "tf32",
    cudnn: str | None = "none",
    top: str | None = "none",
    legacy_matmul: Any = False,
    legacy_conv: Any = True,
) -> SimpleNamespace:
    """A stub of ``torch.backends``; None leaves an attribute out (an older PyTorch)."""

    def node(precision: str | None, **children: Any) -> SimpleNamespace:
        ns = SimpleNamespace(**children)
        if precision is not None:
            ns.fp32_precision = precision
        return ns

    class Legacy:
        """``allow_tf32`` that raises, as PyTorch's does once old and new APIs are mixed."""

        def __init__(self, value: Any, **children: Any) -> None:
            self._value = value
            self.__dict__.update(children)

        @property
        def allow_tf32(self) -> bool:
            if isinstance(self._value, Exception):
                raise self._value
            return bool(self._value)

    mm = Legacy(legacy_matmul)
    if matmul is not None:
        mm.fp32_precision = matmul  # type: ignore[attr-defined]
    cudnn_ns = Legacy(legacy_conv, conv=node(conv))
    if cudnn is not None:
        cudnn_ns.fp32_precision = cudnn  # type: ignore[attr-defined]
    root = node(top, cuda=SimpleNamespace(matmul=mm), cudnn=cudnn_ns)
    return root


@pytest.mark.parametrize(
    ("stub", "matmul", "conv"),
    [
        # PyTorch's defaults: cuBLAS matmuls IEEE fp32, cuDNN convolutions TF32
        (_backends(), "ieee", "tf32"),
        # torch.backends.cudnn.conv.fp32_precision = "ieee"
        (_backends(conv="ieee"), "ieee", "ieee"),
        # the legacy switch turns the new flags to "none": the legacy getter decides
        (_backends(conv="none", legacy_conv=False), "ieee", "ieee"),
        # set_float32_matmul_precision("high")
        (_backends(matmul="tf32", legacy_matmul=True), "tf32", "tf32"),
        # torch.backends.fp32_precision = "ieee" with the levels below deferring to it
        (_backends(conv="none", top="ieee", legacy_conv=True), "ieee", "ieee"),
        # an older PyTorch with only the allow_tf32 switches
        (_backends(None, None, None, None, False, True), "ieee", "tf32"),
        (_backends(None, None, None, None, True, False), "tf32", "ieee"),
        # mixed APIs: the legacy getter raises; a decided level still answers
        (
            _backends(
                matmul="none",
                conv="none",
                legacy_matmul=RuntimeError("mixed"),
                legacy_conv=RuntimeError("mixed"),
            ),
            "unknown",
            "unknown",
        ),
        (_backends(conv="tf32", legacy_conv=RuntimeError("mixed")), "ieee", "tf32"),
    ],
)
def test_fp32_math_reads_every_level(
    stub: SimpleNamespace, matmul: str, conv: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", raising=False)
    assert fp32_math("matmul", stub) == matmul
    assert fp32_math("conv", stub) == conv


def test_cublas_override_makes_matmuls_tf32(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1")
    assert fp32_math("matmul", _backends(matmul="ieee")) == "tf32"
    assert fp32_math("conv", _backends(conv="ieee")) == "ieee"


@pytest.fixture
def restore_tf32_flags() -> Iterator[None]:
    """Set flags through PyTorch's new API only (mixing APIs makes its getters raise)."""
    conv, matmul = torch.backends.cudnn.conv, torch.backends.cuda.matmul
    saved = conv.fp32_precision, matmul.fp32_precision
    yield
    conv.fp32_precision, matmul.fp32_precision = saved


@pytest.mark.usefixtures("restore_tf32_flags")
def test_adapter_records_convolution_and_matmul_math() -> None:
    dev = CudaDevice("cuda")
    torch.backends.cudnn.conv.fp32_precision = "tf32"
    flags = dev.flags()
    assert flags["conv_fp32_math"] == "tf32" and flags["matmul_fp32_math"] == "ieee"
    assert dev.matmul_dtype("fp32") == "fp32"
    torch.backends.cudnn.conv.fp32_precision = "ieee"
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    flags = dev.flags()
    assert flags["conv_fp32_math"] == "ieee" and flags["matmul_fp32_math"] == "tf32"
    assert dev.matmul_dtype("fp32") == "tf32" and dev.matmul_dtype("bf16") == "bf16"
    # one backend set through the new API: PyTorch's generic getter raises, flags do not
    assert flags["float32_matmul_precision"] == "unknown"
    assert "cudnn_allow_tf32" not in flags  # its getter can raise too; the modes replace it
