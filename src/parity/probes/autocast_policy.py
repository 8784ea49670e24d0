"""Another device's autocast policy, reproduced on the CPU (``+autocast=POLICY``).

``torch.autocast`` decides per op which dtype it runs in, and the lists differ by device
type: CUDA's (which TorchNeuron registers for ``neuron``, and XPU and most PrivateUse1
backends reuse) run ``layer_norm``, ``exp``, ``log``, the losses in fp32 and give
``softmax``, ``log_softmax``, ``sum``, ``cumsum`` an fp32 dtype, where the CPU's keep
bf16 inputs in bf16. The expected-error run (what a precision alone does to a workload,
measured on the CPU) must round as the target does, or its error, and the gate built on
it, is too loose for a ``cuda+bf16`` or ``neuron+bf16`` target.

:func:`reproduce` registers, for the life of a ``with`` block, a Python kernel at the
``AutocastCPU`` dispatch key for every op in CUDA's lists (:data:`CUDA_POLICY`, read from
``ATen/autocast_mode.h``: ``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``,
``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE``,
``AT_FORALL_PROMOTE``, and the banned ``binary_cross_entropy``), and a fallthrough for
every op the CPU's lists have and CUDA's do not (so that a composite op such as
``cross_entropy_loss`` decomposes into ops autocast then sees, as on CUDA). Each kernel
casts as the C++ policy does (only floating, non-float64, CPU tensors are cast;
``fp32_set_opt_dtype`` sets a missing ``dtype`` when the first argument is eligible;
``promote`` casts to the widest eligible dtype) and redispatches below autocast, where
autograd records the casts as the C++ kernels' are. CUDA's weight-cast cache changes
speed, not values, and is left out.

:func:`observe` runs three ops under a device's autocast and names the policy they follow,
so a worker records what its device did, not what its adapter expects.

Regenerate :data:`CUDA_POLICY` for a new torch with
``python -m parity.probes.autocast_policy`` (it prints the table parsed from the installed
header); ``tests/probes/test_autocast_policy.py`` checks it op by op.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import torch

Policy = Literal[
    "lower_precision_fp", "fp32", "fp32_set_opt_dtype", "fp32_append_dtype", "promote", "banned"
]
#: the policies a side spec may name (``+autocast=cuda``); "cpu" is the CPU's own
POLICIES = ("cpu", "cuda")

_LOWER = (
    "_convolution.deprecated _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d "
    "conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr matmul "
    "einsum mm mv linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot "
    "_thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell "
    "_scaled_dot_product_flash_attention scaled_dot_product_attention"
)
_FP32 = (
    "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan "
    "pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm "
    "rms_norm group_norm frobenius_norm.dim nuclear_norm nuclear_norm.dim cosine_similarity "
    "poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div "
    "l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss "
    "soft_margin_loss triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits "
    "dist pdist cdist renorm logsumexp upsample_nearest1d _upsample_nearest_exact1d "
    "upsample_nearest2d _upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d "
    "upsample_linear1d upsample_bilinear2d _upsample_bilinear2d_aa upsample_trilinear3d "
    "upsample_bicubic2d _upsample_bicubic2d_aa"
)
_SET_OPT_DTYPE = (
    "prod prod.dim_int softmax.int log_softmax.int cumprod cumsum linalg_vector_norm "
    "linalg_matrix_norm linalg_matrix_norm.str_ord sum sum.dim_IntList"
)
_PROMOTE = (
    "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add"
)

#: CUDA's autocast policy, op overload (``name`` or ``name.overload``) -> policy
CUDA_POLICY: dict[str, Policy] = {
    **dict.fromkeys(_LOWER.split(), "lower_precision_fp"),
    **dict.fromkeys(_FP32.split(), "fp32"),
    **dict.fromkeys(_SET_OPT_DTYPE.split(), "fp32_set_opt_dtype"),
    **{"norm.Scalar": "fp32_append_dtype", "norm.ScalarOpt_dim": "fp32_append_dtype"},
    **dict.fromkeys(_PROMOTE.split(), "promote"),
    "binary_cross_entropy": "banned",
}
#: where ``fp32_append_dtype`` redispatches: the overload that takes a dtype
APPEND_DTYPE = {
    "norm.Scalar": "norm.ScalarOpt_dtype",
    "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype",
}
BANNED = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast: "
    "use torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss "
    "(the target device's autocast refuses it too)"
)
_AUTOCAST_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)


# -- casting, as ATen's autocast does -------------------------------------------------------


def _eligible(x: object) -> bool:
    """A tensor autocast may cast: floating, not float64, on the CPU."""
    return (
        isinstance(x, torch.Tensor)
        and x.is_floating_point()
        and x.dtype != torch.float64
        and x.device.type == "cpu"
    )


def _cast(x: Any, dtype: torch.dtype) -> Any:
    if _eligible(x):
        return x if x.dtype == dtype else x.to(dtype)
    if isinstance(x, list | tuple):
        return type(x)(_cast(v, dtype) for v in x)
    return x


def _widest(values: list[Any], lower: torch.dtype) -> torch.dtype:
    """``promote``: fp32 if any eligible tensor is fp32, else the lower precision."""
    for v in values:
        if isinstance(v, list | tuple):
            if _widest(list(v), lower) == torch.float32:
                return torch.float32
        elif _eligible(v) and v.dtype == torch.float32:
            return torch.float32
    return lower


def _complete(op: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The positional arguments with the defaults a Python kernel is not passed filled in
    (the dispatcher leaves out trailing arguments equal to their defaults)."""
    positional = [a for a in op._schema.arguments if not a.kwarg_only]
    filled = list(args)
    for arg in positional[len(args) :]:
        if not arg.has_default_value():
            break
        filled.append(arg.default_value)
    return tuple(filled)


def _op(name: str) -> Any:
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _dtype_index(op: Any) -> int | None:
    for i, arg in enumerate(op._schema.arguments):
        if arg.name == "dtype":
            return i
    return None


def kernel(name: str, policy: Policy) -> Callable[..., Any]:
    """The ``AutocastCPU`` kernel that applies ``policy`` to op overload ``name``."""
    op = _op(name)
    dtype_at = _dtype_index(op)
    append = _op(APPEND_DTYPE[name]) if name in APPEND_DTYPE else None

    def run(*args: Any, **kwargs: Any) -> Any:
        lower = torch.get_autocast_dtype("cpu")
        target = op
        if policy == "banned":
            raise RuntimeError(BANNED)
        if policy == "lower_precision_fp":
            args, kwargs = _cast(args, lower), {k: _cast(v, lower) for k, v in kwargs.items()}
        elif policy == "fp32":
            args = _cast(args, torch.float32)
            kwargs = {k: _cast(v, torch.float32) for k, v in kwargs.items()}
        elif policy == "promote":
            wide = _widest([*args, *kwargs.values()], lower)
            args, kwargs = _cast(args, wide), {k: _cast(v, wide) for k, v in kwargs.items()}
        elif policy == "fp32_set_opt_dtype" and args and _eligible(args[0]):
            args, kwargs = _with_dtype(args, kwargs, dtype_at)
        elif policy == "fp32_append_dtype" and args and _eligible(args[0]) and append is not None:
            target, args = append, _complete(op, args)
            kwargs = {**kwargs, "dtype": torch.float32}
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_CPU):
            return target(*args, **kwargs)

    return run


def _with_dtype(
    args: tuple[Any, ...], kwargs: dict[str, Any], at: int | None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A ``dtype`` argument set to fp32 where it was not given (a given one stays)."""
    if at is not None and at < len(args):
        if args[at] is None:
            args = (*args[:at], torch.float32, *args[at + 1 :])
        return args, kwargs
    if kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": torch.float32}
    return args, kwargs


def cpu_listed() -> list[str]:
    """The aten op overloads the CPU's autocast lists hold (a kernel at AutocastCPU)."""
    out = []
    for full in torch._C._dispatch_get_all_op_names():
        if full.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(
            full, "AutocastCPU"
        ):
            out.append(full.removeprefix("aten::"))
    return out


def _exists(name: str) -> bool:
    try:
        _op(name)
    except (AttributeError, RuntimeError):
        return False
    return True


def install(policy: str) -> torch.library.Library | None:
    """Make ``torch.autocast("cpu", ...)`` follow ``policy``'s op lists until the returned
    library is destroyed (None for the CPU's own policy: nothing to install)."""
    if policy == "cpu":
        return None
    if policy != "cuda":
        raise ValueError(f"autocast policy {policy!r} is unknown: use one of {', '.join(POLICIES)}")
    lib = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings():
            # torch says once that kernels at AutocastCPU are overridden: that is the point
            warnings.simplefilter("ignore", UserWarning)
            for name, kind in CUDA_POLICY.items():
                if _exists(name):
                    lib.impl(name, kernel(name, kind), "AutocastCPU")  # type: ignore[no-untyped-call]
            for name in cpu_listed():
                if name not in CUDA_POLICY:  # as CUDA: not autocast itself, its parts may be
                    lib.impl(name, torch.library.fallthrough_kernel, "AutocastCPU")  # type: ignore[no-untyped-call]
    except BaseException:
        lib._destroy()  # type: ignore[no-untyped-call]
        raise
    return lib


@contextlib.contextmanager
def reproduce(policy: str) -> Iterator[None]:
    """Inside the block, ``torch.autocast("cpu", ...)`` follows ``policy``'s op lists."""
    lib = install(policy)
    try:
        yield
    finally:
        if lib is not None:
            lib._destroy()  # type: ignore[no-untyped-call]


# -- what a device's autocast did -----------------------------------------------------------

#: the dtype each probe op's output has under each policy, for bf16 inputs
SIGNATURE: dict[str, dict[str, str]] = {
    "cuda": {"layer_norm": "float32", "softmax": "float32", "exp": "float32", "mm": "bfloat16"},
    "cpu": {"layer_norm": "bfloat16", "softmax": "bfloat16", "exp": "bfloat16", "mm": "bfloat16"},
}


def observe(device: torch.device, device_type: str, dtype: torch.dtype) -> dict[str, str]:
    """The output dtype of ``layer_norm``, ``softmax`` and ``exp`` of a bf16 input and of
    ``mm`` of fp32 inputs under the device's autocast at ``dtype`` (ops run on it)."""
    x = torch.linspace(-1, 1, 32, device=device).reshape(4, 8)
    low = x.to(dtype)
    with torch.no_grad(), torch.autocast(device_type=device_type, dtype=dtype):
        found = {
            "layer_norm": torch.nn.functional.layer_norm(low, (8,)).dtype,
            "softmax": torch.softmax(low, dim=-1).dtype,
            "exp": torch.exp(low).dtype,
            "mm": torch.mm(x, x.t()).dtype,
        }
    return {k: str(v).removeprefix("torch.") for k, v in found.items()}


def classify(observed: Mapping[str, str], dtype: str = "bfloat16") -> str | None:
    """The policy whose signature the observed dtypes match (None: neither)."""
    for policy, signature in SIGNATURE.items():
        want = {k: dtype if v == "bfloat16" else v for k, v in signature.items()}
        if dict(observed) == want:
            return policy
    return None


# -- the table from the header ---------------------------------------------------------------

_MACROS: dict[str, Policy] = {
    "AT_FORALL_LOWER_PRECISION_FP": "lower_precision_fp",
    "AT_FORALL_FP32": "fp32",
    "AT_FORALL_FP32_SET_OPT_DTYPE": "fp32_set_opt_dtype",
    "AT_FORALL_PROMOTE": "promote",
}


def parse_header(text: str) -> dict[str, Policy]:
    """CUDA's policy table as ``ATen/autocast_mode.h`` declares it (without the banned op,
    which autocast_mode.cpp registers)."""
    table: dict[str, Policy] = {}
    for macro, policy in _MACROS.items():
        body = re.search(rf"#define {macro}\(_\)(.*?)(?:\n\s*\n|#define)", text, re.S)
        if body is None:
            raise ValueError(f"{macro} not found in the header")
        for entry in re.findall(r"_\(([^()]*)\)", body.group(1)):
            parts = [p.strip() for p in entry.split(",")]
            table[".".join(parts)] = policy
    redispatch = re.search(
        r"#define AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE\(_\)(.*?)\n\s*\n", text, re.S
    )
    if redispatch is None:
        raise ValueError("AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE not found in the header")
    for name in re.findall(r'"(norm\.[A-Za-z_]+)"', redispatch.group(1)):
        table[name] = "fp32_append_dtype"
    return table


def header() -> Path:
    """The installed torch's ``ATen/autocast_mode.h``."""
    return Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"


if __name__ == "__main__":
    for op_name, kind in sorted(parse_header(header().read_text()).items(), key=lambda x: x[1]):
        print(f"{kind:22} {op_name}")
