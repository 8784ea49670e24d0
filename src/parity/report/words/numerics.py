"""The numerics section's words: the fp64 reference's notes and the localisation rule."""

from __future__ import annotations

from parity.model.quality import (
    EXPLAINED_FLOOR,
    Localisation,
    NumericsSection,
    ReferenceNote,
)
from parity.report.words.base import WORDS, Words, _str, says


def note(n: ReferenceNote) -> str:
    """Why a reference or the expected-error run is not used (an older verdict's sentence
    as it was)."""
    return says(n.finding) if n.finding is not None else n.reason or ""


def numerics_reason(n: NumericsSection) -> str:
    """Why the numerics section did not run: the probe's own error, or the judge's finding."""
    return n.reason if n.reason is not None else says(n.finding) if n.finding is not None else ""


def localisation_rule(loc: Localisation) -> str:
    """The rule that names the first diverging module (an older verdict's sentence as it is)."""
    if loc.rule == "numerics.not-localised":
        return (
            f"not localised: without the expected-error run, what {loc.precision} alone does at "
            "each module is unknown (every matmul would exceed the fp32 baseline's error)"
        )
    if loc.rule != "numerics.localised":
        return loc.rule
    source = (
        f"the expected-error run ({loc.expected_run}) or the baseline, whichever is larger"
        if loc.expected_run is not None
        else "the baseline (no expected-error run)"
    )
    return (
        f"first module, in execution order, whose error against fp64 exceeds "
        f"{loc.factor or 0:g}x what explains it: the error the target's precision alone makes "
        f"there ({source}), scaled up by how much more error its input carried "
        f"(+{EXPLAINED_FLOOR:g}); or whose output is the first that is not finite"
    )


WORDS |= {
    "numerics.no-reference": Words(says=lambda f: "no fp64 reference bundle"),
    "numerics.no-expected": Words(
        says=lambda f: (
            f"no expected-error run ({_str(f, 'want')}): the baseline's error is the comparator"
        )
    ),
    "numerics.expected-differs": Words(
        says=lambda f: (
            f"the expected-error run is {_str(f, 'ran')}, the target's precision needs "
            f"{_str(f, 'want')}"
        )
    ),
    "numerics.no-probe": Words(says=lambda f: "the sides ran no numerics probe"),
    "numerics.ungated": Words(
        says=lambda f: (
            f"reported, not gated: without the expected-error run, what {_str(f, 'precision')} "
            "alone does is unknown, and the baseline's error is no bound for it"
        )
    ),
}
