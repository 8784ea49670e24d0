"""``compare --batch-sizes``: the curve of each verdict's own figures, fitted to the width."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.report.curve import render_curve
from parity.report.run import load_run
from tests.fixtures.runs import synthetic_run
from tests.report.cases import printed


@pytest.mark.parametrize("width", [80, 120])
def test_one_row_per_batch_size(tmp_path: Path, width: int) -> None:
    verdict = load_run(synthetic_run(tmp_path / "i", kind="infer")).verdict
    text = printed(lambda c: render_curve([(1, verdict), (8, verdict)], c), width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "Throughput and latency by batch size" in text and "samples/s" in text
    assert text.count("PASS") >= 2 and "* p99 over fewer than 100" in text
