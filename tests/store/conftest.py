"""The history index's fixtures: three comparisons a day apart and a stand-alone run, and
an index of them in a real SQLite file."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from parity.store import Store
from tests.fixtures.runs import synthetic_run, write_bundle

DAY = 86400.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three comparisons a day apart, and one stand-alone run, under one root."""
    root = tmp_path_factory.mktemp("history")
    t0 = time.time() - 10 * DAY
    synthetic_run(root / "a", finished=t0, target_scale=0.9)
    synthetic_run(root / "b", finished=t0 + DAY, target_scale=0.8)
    synthetic_run(
        root / "nested" / "c",
        finished=t0 + 2 * DAY,
        kind="generate",
        target="cpu+threads=1",
        target_scale=1.1,
    )
    write_bundle(
        root / "single", role="run", spec="cpu+bf16", finished=t0 + 3 * DAY, workload="mlp-train"
    )
    return root


@pytest.fixture
def store_file(tmp_path: Path, runs: Path) -> Path:
    path = tmp_path / "index.sqlite"
    with Store.open(path) as s:
        result = s.reindex([runs])
    assert (result.comparisons, result.bundles, result.removed) == (3, 13, 0)
    assert result.problems == []
    return path
