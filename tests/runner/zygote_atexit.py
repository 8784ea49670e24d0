"""Preloaded by a test's zygote: an exit handler that leaves a file, which a zygote that
skips the interpreter's teardown never runs."""

import atexit
import os
from pathlib import Path


def _left() -> None:
    Path(os.environ["PARITY_TEST_ATEXIT"]).write_text("teardown ran")


atexit.register(_left)
