"""Quality checks as rows with one figure each, and the per-module window."""

from __future__ import annotations

from parity.model.quality import (
    AgreementCheck,
    ErrorDistribution,
    LossCheck,
    NonFiniteCheck,
    OutputCheck,
    ReferenceCheck,
    TokensCheck,
    TrajectoryCheck,
)
from parity.report.parts import Sentence, Table
from parity.report.quality import check_rows, figure, numerics, shown_layers
from tests.report.cases import cases, golden


def test_each_kind_of_check_has_its_figure() -> None:
    loss = LossCheck(
        name="loss",
        passed=False,
        final_rel=0.2,
        max_rel=0.3,
        final_baseline=1.0,
        final_target=1.2,
        first_step_outside_band=4,
    )
    assert figure(loss) == (
        "final 1 vs 1.2 (rel 2.00e-01, max over steps 3.00e-01); first step outside the band: 4"
    )
    ref = ReferenceCheck(
        name="output x",
        passed=True,
        k=3.0,
        rmse_target=2e-3,
        rmse_baseline=1e-3,
        bound=4e-3,
        rule="rmse",
        min_atol=5e-3,
        abs_error=ErrorDistribution(max=1.0, mean=0.1, p99=0.5),
    )
    assert figure(ref).startswith("RMSE vs fp64 2.00e-03, bound 4.00e-03 (3x the baseline's")
    cosine = ReferenceCheck(name="grads", kind="cosine", passed=True, cosine=0.999)
    assert figure(cosine) == "cosine 0.9990 with the baseline (no fp64 reference)"
    reported = OutputCheck(
        name="output y",
        gated=False,
        passed=True,
        rel_rmse=1e-3,
        max_abs=1e-2,
        detail="reported; the fp64 reference gates decide",
    )
    row = check_rows((reported,))[0]
    assert row.cells[1] == "INFO" and row.cells[2].endswith(
        "(reported; the fp64 reference gates decide)"
    )
    missing = OutputCheck(name="output z", passed=False, detail="present on one side only")
    assert figure(missing) == "present on one side only"


def test_the_window_starts_before_the_first_divergence() -> None:
    v = cases()["layers"]
    assert v.numerics is not None and v.numerics.layers is not None
    rows, total = shown_layers(v.numerics.layers, 12)
    names = [r.module for r in rows]
    assert total == 112 and len(rows) == 14
    assert names.index(v.numerics.layers.first_divergence or "") == 3
    assert shown_layers(v.numerics.layers, None)[0] == [
        r for r in v.numerics.layers.table if r.leaf
    ]


def test_the_new_checks_have_their_figures() -> None:
    trajectory = TrajectoryCheck(
        name="loss trajectory against fp64",
        passed=False,
        k=2.0,
        steps=40,
        comparator="expected",
        first_failing_step=2,
        worst_step=39,
        worst_ratio=504.0,
        drift_from_step=12,
        rule="r",
    )
    assert figure(trajectory) == (
        "40 steps; worst step 39 at 5e+02x its bound; first step over its bound: 2; windowed "
        "from step 12 (the runs drift apart); comparator: the expected-error run"
    )
    top1 = AgreementCheck(
        name="top-1 logits",
        passed=True,
        metric="top1",
        value=1.0,
        threshold=0.99,
        rows=8,
        agreement=0.875,
        near_ties=1,
        margin_threshold=0.05,
    )
    assert figure(top1) == (
        "top-1 agreement 100.0% of decisive rows (at least 99%); 87.5% of all 8 rows, "
        "1 near-ties (margin <= 5.00e-02)"
    )
    nan = NonFiniteCheck(
        name="non-finite values (target)",
        passed=False,
        side="target",
        what="loss",
        step=3,
        module="body.2",
    )
    assert figure(nan) == "loss not finite: first at step 3, module body.2"
    tokens = TokensCheck(
        name="output tokens",
        passed=True,
        agreement=0.75,
        first_difference=(None, 5),
        margins=(None, 0.01),
        margin_threshold=0.05,
        near_ties=1,
    )
    assert "first difference at position 5 (top-2 margin there 1.00e-02" in figure(tokens)


def test_the_layer_table_shows_expected_and_observed_side_by_side() -> None:
    v = golden("bf16-localisation")
    section = numerics(v, layer_rows=None)
    assert section is not None
    table = next(p for p in section.parts if isinstance(p, Table))
    headers = [c.header for c in table.columns]
    assert headers[1:4] == ["baseline err", "expected err", "target err"]
    row = next(r for r in table.rows if r.cells[0] == "layers.3")
    assert row.highlight and row.cells[-1] == "first, top 1" and row.cells[2] != "-"
    assert "after the run" in (table.title or "")
    texts = [p.text for p in section.parts if isinstance(p, Sentence)]
    assert any(t.startswith("first diverging module: layers.3") for t in texts)
    assert any("expected error of bf16 alone: measured on the CPU" in t for t in texts)
