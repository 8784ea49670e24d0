"""Workload names checked without importing torch or any user code.

A built-in name, ``PREFIX:NAME`` for a registered prefix (``hf:gpt2``, ``hf:./ckpt``), or
``path/to/file.py:factory`` (the file must exist; it is imported only in the worker
processes). Plugins may register more names: they are loaded (which may import torch)
only when a name is none of these.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

from parity.errors import WorkloadError
from parity.plugins import is_file_workload

BUILTIN = ("cnn-infer", "gpt-generate", "gpt-train", "mlp-train")
#: the workload a command runs where none is named
DEFAULT = "gpt-train"
#: what each built-in does (its class's ``kind``; a test keeps the two equal), so that a
#: command that needs another kind is refused before any worker starts
BUILTIN_KINDS = {
    "cnn-infer": "infer",
    "gpt-generate": "generate",
    "gpt-train": "train",
    "mlp-train": "train",
}
#: the built-ins that read ``--data`` (their classes' ``takes_data``; a test keeps the two
#: equal), so that ``--data`` on any other is refused before any worker starts
BUILTIN_TAKE_DATA = frozenset({"gpt-generate", "gpt-train"})
PREFIXES = ("hf",)
#: what a built-in prefix's workloads import besides torch: a zygote preloads it (importing
#: transformers costs a second or more, which every forked repeat would otherwise pay).
#: ``transformers`` imports its parts lazily: its model base (``modeling_utils``, the
#: dearest) and generation loop are named, or each forked repeat imported them again
PREFIX_MODULES = {
    "hf": (
        "transformers",
        "transformers.modeling_utils",
        "transformers.generation.utils",
        "parity.workloads.checkpoint",
        "parity.workloads.hf",
    )
}


def preload_modules(name: str) -> tuple[str, ...]:
    """The modules the workload ``name`` needs beyond the zygote's own (a built-in
    prefix's; never a user's file or a plugin's)."""
    prefix, sep, _ = name.partition(":")
    return PREFIX_MODULES.get(prefix, ()) if sep and not is_file_workload(name) else ()


def _plugins_configured() -> bool:
    return bool(os.environ.get("PARITY_PLUGINS")) or bool(entry_points(group="parity.workloads"))


def check_workload_name(name: str) -> None:
    """Refuse a workload name that names nothing, with the valid choices."""
    if name in BUILTIN:
        return
    if is_file_workload(name):
        file, _, attr = name.rpartition(":")
        if not attr.isidentifier():
            raise WorkloadError(
                f"workload {name!r}: {attr!r} is not a Python name: write path/to/file.py:Factory"
            )
        if not Path(file).expanduser().is_file():
            raise WorkloadError(f"workload file {file} does not exist: check the path")
        return
    prefix, sep, rest = name.partition(":")
    if sep and prefix in PREFIXES:
        if not rest.strip():
            raise WorkloadError(
                f"workload {name!r} names nothing after {prefix}: e.g. {prefix}:gpt2"
            )
        return
    known = list(BUILTIN)
    if _plugins_configured():
        from parity.workloads import prefixes, registered  # plugins may import torch

        if name in registered() or (sep and prefix in prefixes()):
            return
        known = list(registered())
    raise WorkloadError(
        f"unknown workload {name!r}: use one of {', '.join(known)}, "
        + "".join(f"{p}:NAME, " for p in PREFIXES)
        + "or path/to/file.py:factory"
    )


def check_data(name: str, data: str | None) -> None:
    """Refuse ``--data`` that names no file, or that a built-in workload would not read
    (any other workload decides when a worker builds it)."""
    if data is None:
        return
    from parity.workloads.datasource import parse_source, takes_no_data

    if name in BUILTIN and name not in BUILTIN_TAKE_DATA:
        raise takes_no_data(name)
    parse_source(data)


def known_kind(name: str) -> str | None:
    """A built-in workload's kind, known without importing it; None for any other name
    (a worker resolves those)."""
    return BUILTIN_KINDS.get(name)
