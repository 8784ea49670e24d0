"""Where parity caches what it makes once per fingerprint (frozen workloads, fp64
references): a leaf, importable from any layer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parity.spec import SideSpec


def cache_root() -> Path:
    """``PARITY_CACHE_DIR``, else ``~/.cache/parity``: frozen workloads, fp64 references."""
    root = os.environ.get("PARITY_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "parity"


def reference_dir(root: Path | None = None) -> Path:
    """Where fp64 references of whole runs are cached, one folder per fingerprint."""
    from parity.model import SCHEMA_VERSION

    return (root if root is not None else cache_root()) / f"reference-v{SCHEMA_VERSION}-run"


def reference_cached(fingerprint: str, root: Path | None = None) -> bool:
    """The fp64 reference of ``fingerprint`` is cached (a comparison copies it)."""
    from parity.bundle import MANIFEST

    return (reference_dir(root) / fingerprint / MANIFEST).is_file()


def expected_dir(root: Path | None = None) -> Path:
    """Where expected-error runs are cached, one folder per fingerprint and side."""
    from parity.model import SCHEMA_VERSION

    return (root if root is not None else cache_root()) / f"expected-v{SCHEMA_VERSION}"


def expected_key(fingerprint: str, side: SideSpec) -> str:
    """The folder name of ``side``'s expected-error run of ``fingerprint``."""
    return f"{fingerprint}-{str(side).replace('+', '_').replace('=', '-')}"


def expected_cached(fingerprint: str, side: SideSpec | None, root: Path | None = None) -> bool:
    """The expected-error run of ``fingerprint`` on ``side`` is cached (None: no such run)."""
    from parity.bundle import MANIFEST

    if side is None:
        return False
    return (expected_dir(root) / expected_key(fingerprint, side) / MANIFEST).is_file()
