"""The machine's pace for tests that time something: how much slower than an idle machine
its wake-ups and starts are now, read from the load per core.

A test scales by it what it waits for (``patience``) and, where a figure is compared with
a scripted time, the scripted time itself (``stretch``): the client's own jitter, which
grows with the load, then stays a small share of what is measured, and the tolerance the
assertion keeps still catches a wrong figure."""

from __future__ import annotations

import os

#: the most a busy machine stretches a test's times
MOST = 4.0


def stretch() -> float:
    """The load per core now (the one-minute average), between one and ``MOST``."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return min(MOST, max(1.0, load))


def patience(seconds: float) -> float:
    """``seconds`` as an idle machine needs them, stretched by how busy the cores are now
    (the load per core, up to four times): starts, joins and wake-ups slow with the
    machine."""
    return seconds * stretch()
