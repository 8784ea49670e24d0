"""Entry points the zygote tests fork into (instead of the worker)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    """Write what the child sees; exit with the code the job directory names."""
    tmp = Path(argv[0])
    seen = {
        "pid": os.getpid(),
        "sid": os.getsid(0),
        "torch_loaded": "torch" in sys.modules,
        "marker": os.environ.get("ZYGOTE_MARKER"),
        "preloaded": "tabnanny" in sys.modules,
        "cwd": os.getcwd(),
    }
    print(f"child {seen}", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    (tmp / "seen.txt").write_text(repr(seen))
    action = (tmp / "action").read_text() if (tmp / "action").exists() else "ok"
    if action == "sleep":
        time.sleep(60)
    if action == "raise":
        raise RuntimeError("planted")
    return 0 if action == "ok" else 5
