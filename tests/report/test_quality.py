"""Quality checks as rows with one figure each, and the per-module window."""

from __future__ import annotations

from parity.model.quality import ErrorDistribution, LossCheck, OutputCheck, ReferenceCheck
from parity.report.quality import check_rows, figure, shown_layers
from tests.report.cases import cases


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
