"""The words for each finding of the verdict: one template per code, used by every view.

The judge returns findings (``parity.model.findings``): a code, its figures and a
severity. Here each code gets what it says and, where something settles it, the action
that does; the terminal, Markdown, HTML and the summary screen show these strings and
never compose their own. Each concern keeps its codes in its own module (``speed``,
``quality``, ``core``, ``serving``, ``fair``, ``numerics``), added to the tables in
``base``; importing the package registers them all. A code without words here is said by
its code and figures, so a finding is never dropped (``tests/report/test_words.py``
keeps every code the judge emits covered).
"""

from __future__ import annotations

from parity.report.words import core, fair, numerics, quality, serving, speed
from parity.report.words.base import (
    HOWS,
    METHODS,
    WORDS,
    Figures,
    Found,
    Say,
    Words,
    action,
    brief,
    bytes_text,
    detail,
    drift,
    gate,
    how_to_check,
    method,
    says,
    sensitivity,
    trajectory_rule,
)
from parity.report.words.fair import (
    fit,
    fit_reason,
    part_how,
    shape,
    shape_row,
    unproven_evidence,
    unproven_how,
)
from parity.report.words.numerics import localisation_rule, note, numerics_reason
from parity.report.words.quality import undecided, undecided_label
from parity.report.words.serving import curve_best, slo_check, slope
from parity.report.words.speed import BIAS, CHECKS, RUNS, SETTINGS, bias, check, setting

__all__ = [
    "BIAS",
    "CHECKS",
    "HOWS",
    "METHODS",
    "RUNS",
    "SETTINGS",
    "WORDS",
    "Figures",
    "Found",
    "Say",
    "Words",
    "action",
    "bias",
    "brief",
    "bytes_text",
    "check",
    "core",
    "curve_best",
    "detail",
    "drift",
    "fair",
    "fit",
    "fit_reason",
    "gate",
    "how_to_check",
    "localisation_rule",
    "method",
    "note",
    "numerics",
    "numerics_reason",
    "part_how",
    "quality",
    "says",
    "sensitivity",
    "serving",
    "setting",
    "shape",
    "shape_row",
    "slo_check",
    "slope",
    "speed",
    "trajectory_rule",
    "undecided",
    "undecided_label",
    "unproven_evidence",
    "unproven_how",
]
