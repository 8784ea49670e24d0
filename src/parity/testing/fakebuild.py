"""Building the PrivateUse1 test devices' C++ extension (``fakedevice.cpp``) once.

Both profiles load the same library (``parity.testing.fakedevice`` as ``parityfake``,
``parity.testing.fakeneuron`` as ``neuron``): the build is cached under
``PARITY_FAKEDEVICE_BUILD_DIR`` or ``~/.cache/parity/fakedevice``, keyed by the source, the
torch build and the compiler flags, and guarded by a lock a killed build releases.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch

BUILD_DIR_ENV = "PARITY_FAKEDEVICE_BUILD_DIR"
_SOURCE = Path(__file__).with_name("fakedevice.cpp")
_EXT_NAME = "parity_fakedevice"
_CFLAGS = ("-O2",)
_MARKER = "complete.json"


def _cache_key() -> str:
    digest = hashlib.sha256()
    digest.update(_SOURCE.read_bytes())
    for part in (
        torch.__version__,
        str(torch.version.git_version),
        str(torch.compiled_with_cxx11_abi()),
        platform.machine(),
        f"{sys.version_info.major}.{sys.version_info.minor}",
        " ".join(_CFLAGS),
    ):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:16]


def build_dir() -> Path:
    """The directory holding this source's build for this torch."""
    base = os.environ.get(BUILD_DIR_ENV)
    if base:
        root = Path(base).expanduser()
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(cache) / "parity" / "fakedevice"
    return root / _cache_key()


def _built_library(directory: Path) -> Path | None:
    try:
        info = json.loads((directory / _MARKER).read_text())
    except (OSError, ValueError):
        return None
    library = directory / str(info.get("library", ""))
    return library if library.is_file() else None


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    # flock, unlike torch's own lock file, is released if the holder dies.
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build() -> Path:
    """Compile the extension unless a finished build is cached; return the .so."""
    directory = build_dir()
    library = _built_library(directory)
    if library is not None:
        return library
    directory.mkdir(parents=True, exist_ok=True)
    with _exclusive(directory.with_name(directory.name + ".lock")):
        library = _built_library(directory)  # another process may have built it
        if library is not None:
            return library
        # A lock file left by a killed build would make torch wait forever;
        # under our lock nobody else is building here.
        (directory / "lock").unlink(missing_ok=True)
        with warnings.catch_warnings():
            # cpp_extension warns about compiler/ABI checks it cannot make;
            # the build either works or raises, so these are noise here.
            warnings.filterwarnings(
                "ignore", category=UserWarning, module=r"torch\.utils\.cpp_extension"
            )
            from torch.utils import cpp_extension

            built = cpp_extension.load(
                name=_EXT_NAME,
                sources=[str(_SOURCE)],
                extra_cflags=list(_CFLAGS),
                build_directory=str(directory),
                is_python_module=False,
                verbose=False,
            )
        library = Path(str(built)) if built else directory / f"{_EXT_NAME}.so"
        marker = directory / (_MARKER + ".tmp")
        marker.write_text(json.dumps({"library": library.name, "torch": torch.__version__}))
        os.replace(marker, directory / _MARKER)
        return library
