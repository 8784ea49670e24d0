"""An interrupted comparison says how to continue it: Ctrl-C and SIGTERM alike."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import pytest

from parity.measure.resumable import says_how_to_resume


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupt_says_resume_and_is_still_an_interrupt(
    how: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with (
        caplog.at_level(logging.WARNING, logger="parity"),
        pytest.raises(KeyboardInterrupt),
        says_how_to_resume(tmp_path),
    ):
        if how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            raise KeyboardInterrupt
    assert f"parity compare --resume {tmp_path} continues it" in caplog.text
    assert signal.getsignal(signal.SIGTERM) == before  # put back as it was


def test_a_comparison_that_ends_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="parity"), says_how_to_resume(tmp_path):
        pass
    assert "--resume" not in caplog.text
