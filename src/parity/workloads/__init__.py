"""Workloads: the ``Workload`` protocol, the registry, built-ins, ``hf:`` models, user
files. The names import lazily, so that ``parity.workloads.names`` (checking a workload
name) imports neither torch nor any workload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parity.lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from parity.workloads.base import RunContext, RunNumerics, StepRunner, Workload
    from parity.workloads.registry import (
        prefixes,
        register_prefix,
        register_workload,
        registered,
        resolve,
    )

_BASE = ("RunContext", "RunNumerics", "StepRunner", "Workload")
__all__ = [
    "RunContext",
    "RunNumerics",
    "StepRunner",
    "Workload",
    "prefixes",
    "register_prefix",
    "register_workload",
    "registered",
    "resolve",
]


__getattr__ = _lazy_names(
    "parity.workloads",
    {
        **dict.fromkeys(__all__, "parity.workloads.registry"),
        **dict.fromkeys(_BASE, "parity.workloads.base"),
    },
)
