"""Quality checks as rows with one figure each, and the per-module window."""

from __future__ import annotations

from parity.model.quality import (
    AgreementCheck,
    Divergence,
    ErrorDistribution,
    LossCheck,
    NonFiniteCheck,
    OutputCheck,
    ReferenceCheck,
    TokensCheck,
    TrajectoryCheck,
)
from parity.report.parts import Sentence, Table
from parity.report.quality import check_rows, figure, gating, numerics, shown_layers
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
        "final loss rel diff 2.00e-01; reported: 1 vs 1.2, max over steps 3.00e-01, first step "
        "outside the band 4"
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
    text, bound = gating(ref)
    assert text == "RMSE vs fp64 2.00e-03, passes by rmse; reported: smallest passing atol 5.00e-03"
    assert bound.startswith("<= 4.00e-03 (3x the baseline's 1.00e-03 + tol/10)")
    cosine = ReferenceCheck(name="grads", kind="cosine", passed=True, cosine=0.999)
    assert gating(cosine) == ("cosine 0.9990 with the baseline", ">= 0.99 (no fp64 reference)")
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
    # one gating figure and its bound; a check that does not gate says so in its bound
    assert row.cells[3].startswith("reported only; <= ")
    missing = OutputCheck(name="output z", passed=False, detail="present on one side only")
    assert figure(missing) == "present on one side only"


def test_the_short_table_leads_with_the_first_divergence_and_the_amplifiers() -> None:
    v = cases()["layers"]
    assert v.numerics is not None and v.numerics.layers is not None
    loc = v.numerics.layers
    rows, total = shown_layers(loc, 12)
    names = [r.module for r in rows]
    assert total == 112 and len(rows) == 12
    assert names[: 1 + len(loc.top_amplification)] == [
        loc.first_divergence,
        *loc.top_amplification,
    ]
    rest = [r.target_error or 0.0 for r in rows[1 + len(loc.top_amplification) :]]
    assert rest == sorted(rest, reverse=True)  # then the largest errors, whatever the layer
    left_out = [r for r in loc.table if r.leaf and r.module not in names]
    assert max(r.target_error or 0.0 for r in left_out) <= min(rest)
    assert shown_layers(loc, None)[0] == [r for r in loc.table if r.leaf]


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
    assert gating(trajectory) == (
        "worst step 39 at 5e+02x its bound (40 steps); first step over its bound: 2; windowed "
        "from step 12 (the runs drift apart)",
        "<= 1x (2x the expected-error run's error so far + tol/10)",
    )
    top1 = AgreementCheck(
        name="top-1 every position",
        passed=True,
        metric="top1",
        value=1.0,
        threshold=0.99,
        rows=400,
        agreement=0.9975,
        near_ties=1,
        margin_threshold=0.05,
        decisive=399,
        required=299,
        decided=True,
        not_compared=8,
    )
    assert gating(top1) == (
        "top-1 agreement 100.0% of 399 decisive rows; reported: 99.8% of all 400 rows, 8 rows "
        "after a first difference not compared",
        ">= 99% over >= 299 decisive rows (near-tie margin 5.00e-02)",
    )
    undecided = AgreementCheck(
        name="top-1 logits",
        passed=None,
        metric="top1",
        threshold=0.99,
        rows=4,
        decisive=0,
        required=299,
        decided=False,
        margin_threshold=1.63,
        detail="not decided: 0 decisive rows, 299 needed to tell 99% from chance",
    )
    row = check_rows((undecided,))[0]
    assert row.cells[1] == "NOT DECIDED" and row.highlight and "PASS" not in row.cells
    assert row.cells[2].startswith("0 decisive rows of 4") and "299 needed" in row.cells[2]
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
        name="tokens every_tokens",
        passed=True,
        agreement=5 / 6,
        first_difference=(None, 5),
        margins=(None, 0.01),
        margin_threshold=0.05,
        near_ties=1,
        prompts=2,
        new_tokens=8,
        compared=14,
        not_compared=2,
        divergences=(Divergence(prompt=1, position=5, margin=0.01, near_tie=True),),
    )
    text, bound = gating(tokens)
    assert text.startswith(
        "83.3% of 14 tokens agree (2 prompts x 8 new, each up to its first difference; 2 "
        "after it not compared); first differences: prompt 1 token 5 (margin 1.00e-02, "
        "near-tie)"
    )
    assert bound == "a first difference only where the baseline's top-2 margin < 5.00e-02 " + (
        "(near-tie)"
    )


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
