"""The numerics section on synthetic comparisons with references (see numerics_cases)."""

from __future__ import annotations

from pathlib import Path

from parity.judge.verdict import judge
from parity.report import words
from tests.judge import numerics_cases

#: where the synthetic sides say they are (nothing is written there)
ROOT = Path("/synthetic")


def test_a_bf16_target_without_its_expected_run_is_not_held_to_fp32_errors() -> None:
    a, b, ref, _ = numerics_cases.bf16_localisation(ROOT)
    v = judge(a, b, reference=ref)
    n = v.numerics
    assert n is not None and n.expected is not None and not n.expected.available
    assert "no expected-error run (cpu+bf16)" in words.note(n.expected)
    # the fp64 gates are reported: an fp32 baseline's error is no bound for bf16 ...
    fp64 = [g for g in n.gates if g.kind in ("fp64", "trajectory")]
    assert fp64 and not any(g.gated for g in fp64) and n.passed is None
    assert all("what bf16 alone does is unknown" in (words.detail(g) or "") for g in fp64)
    # ... the direct checks decide instead, and no module is named
    assert v.quality is not None
    direct = [c for c in v.quality.checks if c.kind in ("loss", "output")]
    assert direct and all(c.gated for c in direct)
    assert n.layers is not None and n.layers.first_divergence is None
    assert words.localisation_rule(n.layers).startswith("not localised")


def test_with_its_expected_run_the_same_target_is_localised() -> None:
    a, b, ref, exp = numerics_cases.bf16_localisation(ROOT)
    v = judge(a, b, reference=ref, expected=exp)
    assert v.numerics is not None and v.numerics.layers is not None
    assert v.numerics.layers.first_divergence == "layers.3"
    assert v.numerics.passed is False and not v.passed


def test_an_output_missing_on_the_target_fails_even_with_a_whole_run_reference() -> None:
    a, _, ref, exp = numerics_cases.bf16_localisation(ROOT)
    values = numerics_cases.reference_values()
    b = numerics_cases.make_side(
        ROOT / "other",
        "target",
        "neuron+bf16",
        losses=numerics_cases.LOSSES,
        probe=numerics_cases.with_errors(values, numerics_cases.BF16, 3, logits=4e-3),
        after_run=None,
        outputs={"other_logits": values["eval_logits"].float()},
    )
    v = judge(a, b, reference=ref, expected=exp)
    assert v.quality is not None and not v.quality.passed
    missing = {c.name: c for c in v.quality.checks}["output eval_logits"]
    assert missing.gated and not missing.passed
    assert words.detail(missing) == "present on one side only"


def test_without_its_expected_run_the_words_say_what_version_6_said() -> None:
    """The reference note, the ungated checks and the rule said by code, word for word as
    version 6's sentences."""
    a, b, ref, _ = numerics_cases.bf16_localisation(ROOT)
    n = judge(a, b, reference=ref).numerics
    assert n is not None and n.expected is not None and n.layers is not None
    assert words.note(n.expected) == (
        "no expected-error run (cpu+bf16): the baseline's error is the comparator"
    )
    fp64 = [g for g in n.gates if g.kind in ("fp64", "trajectory")]
    assert {words.detail(g) for g in fp64} == {
        "reported, not gated: without the expected-error run, what bf16 alone does is "
        "unknown, and the baseline's error is no bound for it"
    }
    assert words.localisation_rule(n.layers) == (
        "not localised: without the expected-error run, what bf16 alone does at each module "
        "is unknown (every matmul would exceed the fp32 baseline's error)"
    )
    no_ref = judge(a, b).numerics
    assert no_ref is not None and no_ref.reference is not None
    assert words.note(no_ref.reference) == "no fp64 reference bundle"
