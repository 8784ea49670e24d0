"""The format a side's work effectively ran in, and the CPU side whose run shows what that
format alone does to a workload: facts about a side and its bundle that both the scheduler
(which expected-error run to make) and the judge (which tolerance row applies) read."""

from __future__ import annotations

from collections.abc import Mapping

from parity.model.bundle import Bundle
from parity.model.manifest import FlagValue
from parity.model.ops import OpsCensus
from parity.model.spec import SideSpec


def spec_precision(side: SideSpec) -> str:
    """The format a side spec asks for: its precision, else its emulation profile's."""
    if side.precision != "fp32":
        return side.precision
    if side.emulate:
        return side.emulate.removeprefix("matmul-")
    return "fp32"


#: ATen ops (overload packets, as the op scan names them) that run a convolution
CONV_OPS = frozenset(
    f"aten::{name}"
    for name in (
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "convolution",
        "_convolution",
        "convolution_backward",
        "cudnn_convolution",
        "cudnn_convolution_transpose",
    )
)


def effective_precision(
    side: SideSpec, flags: Mapping[str, FlagValue] | None = None, *, convolutions: bool = True
) -> str:
    """The format the side's matmuls and convolutions effectively run in.

    A reduced precision or an emulation profile says so itself. An fp32 side is tf32 when
    its recorded device flags say fp32 matmuls run in TF32, or fp32 convolutions do (cuDNN's
    default on CUDA) and the run has convolutions (``convolutions``: True when unknown)."""
    asked = spec_precision(side)
    if asked != "fp32":
        return asked
    flags = flags or {}
    if flags.get("matmul_fp32_math") == "tf32":
        return "tf32"
    if convolutions and flags.get("conv_fp32_math") == "tf32":
        return "tf32"
    return "fp32"


def runs_convolutions(ops: OpsCensus | None) -> bool:
    """Whether a bundle's op inventory has a convolution (True when it has no inventory)."""
    if ops is None or not ops.inventory:
        return True
    return any(row.op.rsplit(".", 1)[0] in CONV_OPS for row in ops.inventory)


def bundle_precision(bundle: Bundle) -> str:
    """:func:`effective_precision` of a measured bundle, from what it recorded."""
    env = bundle.manifest.environment
    flags = env.device.flags if env is not None else None
    return effective_precision(bundle.side, flags, convolutions=runs_convolutions(bundle.ops))


def expected_side(target: SideSpec, precision: str, policy: str | None = None) -> SideSpec | None:
    """The CPU side whose run shows what ``precision`` alone does to the workload: the
    target's autocast precision, with the target's autocast policy (``policy``: whose op
    lists its autocast followed; another than the CPU's is reproduced on the CPU), or its
    emulation profile; TF32 by emulation; None for fp32."""
    if precision == "fp32":
        return None
    if target.precision != "fp32" or target.emulate:
        other = policy if target.precision != "fp32" and policy not in (None, "cpu") else None
        return SideSpec(
            device="cpu", precision=target.precision, emulate=target.emulate, autocast=other
        )
    return SideSpec(device="cpu", emulate=f"matmul-{precision}")


def bundle_autocast_policy(bundle: Bundle) -> str | None:
    """Whose autocast op lists a measured bundle's autocast followed (None: not recorded)."""
    resolved = bundle.manifest.resolved
    return resolved.autocast_policy if resolved is not None else None
