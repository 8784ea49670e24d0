"""The decision sections: gates, sides, fairness, differences, what is not proven."""

from __future__ import annotations

from dataclasses import replace

from parity.model.metrics import Flops, Peak
from parity.model.verdict import OperationalItem
from parity.report.decision import differences, fairness, gates, headline, sides, unproven
from parity.report.parts import Sentence, Table
from tests.report.cases import golden


def sentences(parts: tuple[object, ...]) -> list[str]:
    return [p.text for p in parts if isinstance(p, Sentence)]


def test_headline_and_gates() -> None:
    v = golden("fails-quality")
    title, subtitle = headline(v)
    assert title == "FAIL: the target fails a gate"
    assert subtitle.startswith("gpt-train (tiny, train): baseline cuda against target neuron+bf16")
    table = gates(v).parts[0]
    assert isinstance(table, Table) and [r.highlight for r in table.rows] == [False, True]


def test_fairness_in_script_mode_and_with_allowed_differences() -> None:
    v = golden("passes")
    script = replace(v, fairness=replace(v.fairness, verified=False, note="script mode"))
    assert "the contract is unverified" in sentences(fairness(script).parts)[0]
    broken = fairness(golden("contract-broken"))
    assert sentences(broken.parts)[0] == (
        "the sides ran different workloads: steps differ, each allowed by name"
    )
    table = next(p for p in broken.parts if isinstance(p, Table))
    steps = next(r for r in table.rows if r.cells[0] == "steps")
    assert steps.highlight and steps.cells[1:] == (
        "40",
        "30",
        "no",
        "the target team ran a shorter schedule",
    )


def test_a_flop_count_that_failed_is_said_with_the_side() -> None:
    v = golden("passes")
    flops = Flops(per_step=None, method="flop_counter", error="unsupported op aten::foo")
    target = replace(v.sides.target, flops=flops)
    made = sides(replace(v, sides=replace(v.sides, target=target)), None)
    assert "target FLOPs not counted: unsupported op aten::foo" in sentences(made.parts)


def test_an_mfu_above_the_peak_is_said_to_be_wrong_not_shown_as_a_figure() -> None:
    """The first GPU run read 121.5% of the fp32 peak (cuDNN ran the convolutions in
    TF32): a figure above 100% says that the count or the peak is wrong."""
    v = golden("passes")
    peak = Peak(device="NVIDIA H200", dtype="fp32", flops=66.9e12)

    def line(share: float) -> str:
        flops = Flops(per_step=1e9, method="meta", mfu=share, peak=peak, achieved_flops=1e12)
        target = replace(v.sides.target, flops=flops)
        table = sides(replace(v, sides=replace(v.sides, target=target)), None).parts[0]
        assert isinstance(table, Table)
        return " ".join(" ".join(r.cells) for r in table.rows)

    assert "121.5% of 67 TFLOP/s fp32: above the peak" in line(1.215)
    assert "15.6% of 67 TFLOP/s fp32" in line(0.156) and "above the peak" not in line(0.156)


def test_differences_and_unproven_are_left_out_when_empty() -> None:
    v = golden("passes")
    assert differences(replace(v, config_differences=(), environment_differences=())) is None
    assert unproven(replace(v, unproven=(), operational=())) is None
    answered = (OperationalItem(item="quotas", answer="raised to 64", answered=True),)
    made = unproven(replace(v, unproven=(), operational=answered))
    assert made is not None
    table = made.parts[0]
    assert isinstance(table, Table) and table.rows[0].cells == ("quotas", "raised to 64")
