"""The machine's pace: the load per core, between one and four."""

from __future__ import annotations

import os

import pytest

from parity.testing import pace, raycluster


def test_patience_stretches_with_the_load_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = os.cpu_count() or 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert pace.patience(180) == pytest.approx(180) and pace.stretch() == 1.0
    monkeypatch.setattr(os, "getloadavg", lambda: (2.5 * cores, 0.0, 0.0))
    assert pace.patience(180) == pytest.approx(450) and pace.stretch() == pytest.approx(2.5)
    monkeypatch.setattr(os, "getloadavg", lambda: (40.0 * cores, 0.0, 0.0))
    assert pace.patience(180) == pytest.approx(720)  # at most four times
    assert raycluster.patience is pace.patience  # the cluster fixtures wait by the same pace
