"""Imports the parent needs later, made while its first worker starts.

The parent reads each finished bundle's tensors as numpy arrays (``parity.arrays``: the
safetensors library and numpy, never torch, which cost about two seconds on a CPU when
the judge needed it). The HTML report after
the verdict imports matplotlib (about a second). ``import_ahead`` starts such imports in
a thread while the zygote imports torch in its own process on another core; a reader
then finds them done. ``settle`` waits for them before the timed processes begin, so
that an import never runs beside a measured step. The threads are joined at exit, so a
process that ends early never exits in the middle of importing an extension.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import sys
import threading

#: what the parent needs first after a worker: a bundle's tensors
MODULE = "parity.arrays"
_threads: dict[tuple[str, ...], threading.Thread] = {}
_lock = threading.Lock()


def _import(modules: tuple[str, ...]) -> None:
    for name in modules:
        with contextlib.suppress(Exception):  # the reader that needs it raises its own error
            importlib.import_module(name)


def import_ahead(*modules: str) -> threading.Thread | None:
    """Start importing ``modules`` (default ``MODULE``) in a thread, once per process and
    list; None where they are all imported already or their thread was started."""
    wanted = modules or (MODULE,)
    with _lock:
        if wanted in _threads or all(name in sys.modules for name in wanted):
            return None
        thread = threading.Thread(
            target=_import, args=(wanted,), name="parity-import-ahead", daemon=True
        )
        _threads[wanted] = thread
        thread.start()
        atexit.register(thread.join)
        return thread


def settle() -> None:
    """Wait for every import started ahead (before the first timed process)."""
    with _lock:
        threads = list(_threads.values())
    for thread in threads:
        thread.join()
