"""Torch imported in the parent while its first worker starts.

The parent reads each finished bundle's tensors (``safetensors.torch``), so it imports
torch before the first bundle is read: about two seconds on a CPU, which used to come
after the first worker ended, on the comparison's critical path. ``import_ahead`` starts
that import in a thread when the first job is prepared (the zygote imports torch in its
own process at the same time, on another core); a reader then finds it done. The thread
is joined at exit, so a process that ends early never exits in the middle of importing
an extension.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import sys
import threading

#: what the parent needs first after a worker: a bundle's tensors
MODULE = "safetensors.torch"
_thread: threading.Thread | None = None
_lock = threading.Lock()


def _import() -> None:
    with contextlib.suppress(Exception):  # the reader that needs it raises its own error
        importlib.import_module(MODULE)


def import_ahead() -> threading.Thread | None:
    """Start importing ``MODULE`` in a thread, once per process; None where it is already
    imported or started."""
    global _thread
    with _lock:
        if _thread is not None or MODULE in sys.modules:
            return None
        _thread = threading.Thread(target=_import, name="parity-import-ahead", daemon=True)
        _thread.start()
        atexit.register(_thread.join)
        return _thread
