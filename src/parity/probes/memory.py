"""Host memory: peak resident set size of this process, resettable on Linux.

Linux keeps the high-water mark in ``/proc/self/status`` (VmHWM) and resets it when "5"
is written to ``/proc/self/clear_refs``; elsewhere the lifetime peak from
``getrusage`` is used and cannot be reset (reported as such).
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


def reset_host_peak() -> bool:
    """Reset the peak RSS; False where the platform cannot."""
    try:
        _CLEAR.write_text("5")
    except OSError:
        return False
    return True


def host_peak_rss() -> int:
    """Peak resident set size in bytes (since the last successful reset)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)
