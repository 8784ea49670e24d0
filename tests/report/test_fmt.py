"""Figures written once for every report, and the one vocabulary of result words."""

from __future__ import annotations

import pytest

from parity.model.metrics import Percentiles
from parity.report import fmt


def test_result_words() -> None:
    assert fmt.result_of(True) == "PASS" and fmt.result_of(False) == "FAIL"
    assert fmt.result_of(None) == "INFO" and fmt.result_of(True, gated=False) == "INFO"
    assert fmt.RESULTS == ("PASS", "FAIL", "NOT DECIDED", "INFO", "WITHHELD", "ERROR")


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (0.0, "0 s"), (2.5, "2.50 s"), (0.0123, "12.30 ms"), (4.2e-6, "4.2 µs")],
)
def test_seconds(value: float | None, text: str) -> None:
    assert fmt.seconds(value) == text


def test_other_units() -> None:
    assert fmt.nbytes(3 << 28) == "768.0 MiB" and fmt.nbytes(5 << 40) == "5120.0 GiB"
    assert fmt.usd(0.00067) == "$0.0007" and fmt.usd(32.77) == "$32.77"
    assert fmt.sci(0.0) == "0" and fmt.sci(1.234e-5) == "1.23e-05"
    assert fmt.rate(1234.5, "tokens") == "1,234.5 tokens/s" and fmt.flops(2e10) == "20.0 GFLOP/s"


def test_a_p99_over_few_samples_is_marked() -> None:
    few = Percentiles(p50=0.001, p90=0.002, p99=0.003, mean=0.0015, n=40)
    many = Percentiles(p50=0.001, p90=0.002, p99=0.003, mean=0.0015, n=400)
    assert fmt.percentiles(few) == "1.00 ms / 2.00 ms / 3.00 ms*"
    assert fmt.percentiles(many) == "1.00 ms / 2.00 ms / 3.00 ms"
    assert fmt.percentiles(None) == "-"
