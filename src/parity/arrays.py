"""A bundle's tensors as the parent holds them: numpy arrays, read without torch.

The parent judges what its workers wrote; it never runs a model, so it need not import
torch (about two seconds of CPU a command) to read ``numerics.safetensors`` and
``capture.safetensors``. :func:`read` has the safetensors library check the file (its
header, offsets and sizes) and views each tensor's bytes as an array; bfloat16, which
numpy lacks, is widened to float32 exactly (its 16 bits are float32's upper half). The
helpers are the few operations the judge shares: whether an array holds floats, its
float64 copy, and the cosine similarity as ``torch.nn.functional.cosine_similarity``
defines it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
Arrays = Mapping[str, Array]
#: safetensors' dtype names numpy reads as they are (little-endian, as the format is)
DTYPES: dict[str, str] = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U64": "<u8",
    "U32": "<u4",
    "U16": "<u2",
    "U8": "u1",
    "BOOL": "?",
}
#: torch.nn.functional.cosine_similarity's floor on each norm
EPS = 1e-8


def read(data: bytes) -> dict[str, Array]:
    """The tensors of a safetensors file, by name (read-only arrays). ValueError names a
    file the library refuses or a dtype parity never writes."""
    from safetensors import SafetensorError, deserialize

    try:
        views = deserialize(data)  # type: ignore[no-untyped-call]
    except SafetensorError as exc:
        raise ValueError(str(exc)) from exc
    out: dict[str, Array] = {}
    for name, view in views:
        dtype, shape, raw = view["dtype"], tuple(view["shape"]), view["data"]
        if dtype == "BF16":
            wide = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            out[name] = wide.view(np.float32).reshape(shape)
        elif dtype in DTYPES:
            out[name] = np.frombuffer(raw, dtype=DTYPES[dtype]).reshape(shape)
        else:
            raise ValueError(f"tensor {name!r} has dtype {dtype}, which parity never writes")
    return out


def floating(x: Array) -> bool:
    """Whether ``x`` holds floating-point values (not tokens, indices or flags)."""
    return bool(x.dtype.kind == "f")


def f64(x: Array) -> npt.NDArray[np.float64]:
    """``x`` as float64 (a copy where it is not already)."""
    return np.asarray(x, dtype=np.float64)


def cosine_similarity(a: Array, b: Array, axis: int = -1) -> npt.NDArray[np.float64]:
    """The cosine similarity along ``axis``, each side scaled by its norm floored at
    ``EPS`` first (so a zero row scores 0, and a NaN or Inf gives NaN), in float64."""
    x, y = f64(a), f64(b)
    nx = np.maximum(np.linalg.norm(x, axis=axis, keepdims=True), EPS)
    ny = np.maximum(np.linalg.norm(y, axis=axis, keepdims=True), EPS)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.sum((x / nx) * (y / ny), axis=axis), dtype=np.float64)
