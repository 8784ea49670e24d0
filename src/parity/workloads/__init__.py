"""Workloads: the ``Workload`` protocol, the registry, built-ins, ``hf:`` models, user
files. The names import lazily, so that ``parity.workloads.names`` (checking a workload
name) imports neither torch nor any workload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name in _BASE:
        from parity.workloads import base

        return getattr(base, name)
    if name in __all__:
        from parity.workloads import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'parity.workloads' has no attribute {name!r}")
