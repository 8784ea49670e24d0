"""Where parity caches what it makes once per fingerprint (frozen workloads, fp64
references): a leaf, importable from any layer."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parity.model.spec import SideSpec


CACHE_ENV = "PARITY_CACHE_DIR"


def cache_root() -> Path:
    """``PARITY_CACHE_DIR``, else ``~/.cache/parity``: frozen workloads, fp64 references
    (absolute: a worker's workload may change the working directory)."""
    root = os.environ.get(CACHE_ENV)
    return Path(os.path.abspath(root)) if root else Path.home() / ".cache" / "parity"


def _versioned(name: str, root: Path | None) -> Path:
    """``ROOT/NAME-vN``: a cache of runs in this bundle schema (``root`` None: the cache)."""
    from parity.model import SCHEMA_VERSION

    return (root if root is not None else cache_root()) / name.format(v=SCHEMA_VERSION)


def _complete(run: Path) -> bool:
    """A cached run is there once its manifest is (what a comparison checks to copy it)."""
    from parity.bundle import MANIFEST

    return (run / MANIFEST).is_file()


@functools.cache
def stack_key() -> str:
    """What a cached run depends on besides its workload and side: parity's version, the
    torch it runs on and the Python running it (12 hex digits of their sha256)."""
    import hashlib
    import platform
    import sys
    from importlib.metadata import PackageNotFoundError, version

    from parity.version import __version__

    torch = sys.modules.get("torch")
    try:
        stack = str(getattr(torch, "__version__", "")) or version("torch")
    except PackageNotFoundError:
        stack = "none"
    text = f"parity {__version__}\0torch {stack}\0python {platform.python_version()}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def run_key(fingerprint: str) -> str:
    """The folder name of a cached run of ``fingerprint`` (an fp64 reference): keyed on
    the stack too, so another parity or torch never reuses it."""
    return f"{fingerprint}-{stack_key()}"


def reference_dir(root: Path | None = None) -> Path:
    """Where fp64 references of whole runs are cached, one folder per fingerprint."""
    return _versioned("reference-v{v}-run", root)


def reference_cached(fingerprint: str, root: Path | None = None) -> bool:
    """The fp64 reference of ``fingerprint`` is cached (a comparison copies it)."""
    return _complete(reference_dir(root) / run_key(fingerprint))


def expected_dir(root: Path | None = None) -> Path:
    """Where expected-error runs are cached, one folder per fingerprint and side."""
    return _versioned("expected-v{v}", root)


def expected_key(fingerprint: str, side: SideSpec) -> str:
    """The folder name of ``side``'s expected-error run of ``fingerprint``."""
    return f"{run_key(fingerprint)}-{str(side).replace('+', '_').replace('=', '-')}"


def expected_cached(fingerprint: str, side: SideSpec | None, root: Path | None = None) -> bool:
    """The expected-error run of ``fingerprint`` on ``side`` is cached (None: no such run)."""
    return side is not None and _complete(expected_dir(root) / expected_key(fingerprint, side))
