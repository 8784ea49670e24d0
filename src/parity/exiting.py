"""Leaving a process that imported torch without the interpreter's teardown.

At exit CPython tears down every module and collects what they held; with torch loaded
that can take most of a second on a small machine, which the caller of the command
waits for after the last line: a
comparison's parent, every spawned worker, every test that runs the command line. The
zygote's forked children already leave with ``os._exit``; ``leave`` does the same for the
entry points, after what a normal exit runs that matters: the non-daemon threads are
joined, the ``atexit`` functions run (temporary directories, logging, anything a user's
workload registered) and the standard streams are flushed. Without torch in the process
the teardown costs nothing worth skipping, and the normal exit is taken.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """Exit with ``code``: skip the interpreter's teardown where torch is loaded."""
    if "torch" not in sys.modules:
        sys.exit(code)
    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # a reader that closed its end already has what it wanted: the code stands
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
