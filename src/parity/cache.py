"""Where parity caches what it makes once per fingerprint (frozen workloads, fp64
references): a leaf, importable from any layer."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``PARITY_CACHE_DIR``, else ``~/.cache/parity``: frozen workloads, fp64 references."""
    root = os.environ.get("PARITY_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "parity"
