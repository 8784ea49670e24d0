"""One output against the fp64 reference: what a failure found is a finding, said in
words by the report (``parity.report.words``)."""

from __future__ import annotations

import numpy as np

from parity.judge.fp64 import gate
from parity.report import words


def test_a_reference_check_that_cannot_compare_says_why_in_a_finding() -> None:
    t, b, r = np.ones(4), np.ones(4), np.ones(4)
    shapes = gate("out", np.ones(3), b, r, 4.0, 1e-3)
    assert not shapes.passed and shapes.finding is not None and shapes.detail is None
    assert shapes.finding.code == "quality.shapes-differ"
    assert words.detail(shapes) == "the sides' shapes differ"
    nan = gate("out", np.array([1.0, np.nan, 1.0, 1.0]), b, r, 4.0, 1e-3)
    assert not nan.passed and words.detail(nan) == "the target's output holds NaN or inf"
    cosine = gate("out", t, b, None, 4.0, 1e-3)
    assert cosine.passed and cosine.kind == "cosine"
    assert words.detail(cosine) == "no fp64 reference: cosine similarity with the baseline"
    plain = gate("out", t * 1.0001, b, r, 4.0, 1e-3)
    assert plain.finding is None
