"""torch's process-wide settings as they really were when the steps ran.

parity sets a side up (threads, determinism) before the workload's code runs; that code
may change torch's global settings afterwards (``torch.set_default_dtype(torch.float64)``
in ``build_model``, ``torch.set_num_threads(1)``, ``set_float32_matmul_precision``). The
worker reads them again right after the timed steps (``read``), records them in the
manifest (``Resolved.timed``) and names each one the workload changed (``changes``):
what the judge and the views show, and what the manifest says ran.

A change breaks the comparison's contract where it changes what the side computes in:
the default dtype (an "fp32" side that ran in float64), the float32 matmul precision
and the TF32 switches. Threads, determinism and cuDNN's benchmark mode change the
figures, not the contract: they are named, not failed.
"""

from __future__ import annotations

import torch

from parity.model.manifest import SettingChange, TorchSettings

#: the settings whose change breaks the contract (what a side computes in)
CONTRACT = frozenset(
    {"default_dtype", "float32_matmul_precision", "cuda_matmul_allow_tf32", "cudnn_allow_tf32"}
)


def read() -> TorchSettings:
    """The settings now, in this process."""
    return TorchSettings(
        default_dtype=str(torch.get_default_dtype()),
        num_threads=torch.get_num_threads(),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
        cuda_matmul_allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32),
        cudnn_allow_tf32=bool(torch.backends.cudnn.allow_tf32),
        cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
    )


def changes(before: TorchSettings, during: TorchSettings) -> tuple[SettingChange, ...]:
    """Each setting that differs, in field order."""
    found = []
    for name in TorchSettings.__dataclass_fields__:
        x, y = getattr(before, name), getattr(during, name)
        if x != y:
            found.append(
                SettingChange(
                    setting=name, before=str(x), during=str(y), breaks_contract=name in CONTRACT
                )
            )
    return tuple(found)
