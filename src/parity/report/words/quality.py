"""The quality section's words: asymmetric settings, shapes and curves, undecided gates."""

from __future__ import annotations

from parity.model.quality import (
    Quality,
)
from parity.report.words.base import Figures, _int, _list, _num, _str
from parity.report.words.speed import setting


def _asymmetric(f: Figures) -> str:
    tuned = f.get("tuned")
    first = (
        f"{tuned} tuned, {'target' if tuned == 'baseline' else 'baseline'} first-run"
        if tuned in ("baseline", "target")
        else "the sides are tuned differently"
    )
    named = ", ".join(setting(s) for s in _list(f, "settings"))
    return f"{first} ({named}): the ratio is not a hardware result"


def _shapes(f: Figures) -> str:
    if "baseline" not in f:
        return "the sides' shapes differ"
    return f"shapes differ: {f.get('baseline')} vs {f.get('target')}"


def _curve_lengths(f: Figures) -> str:
    if "fp64" not in f:
        return f"curve lengths differ: {_int(f, 'baseline')} vs {_int(f, 'target')} steps"
    return (
        "the curves' lengths differ (baseline, target, fp64): "
        f"{_int(f, 'baseline')}, {_int(f, 'target')} and {_int(f, 'fp64')} steps"
    )


def _drift(f: Figures) -> str:
    return (
        f"from step {_int(f, 'step')} the comparator's loss differs from fp64 by more than "
        f"{_num(f, 'drift'):g} (relative): training amplifies rounding until the runs drift "
        f"apart, so one step's error is noise; from there the mean error over windows of "
        f"{_int(f, 'window')} steps is gated against {_num(f, 'k'):g}x the comparator's mean"
    )


def _at(f: Figures) -> str:
    """Where a value first went non-finite: a step, or after the steps."""
    return f"step {_int(f, 'step')}" if f.get("step") is not None else "after the steps (finish)"


def undecided_label(f: Figures) -> str:
    """A gate not decided, with its evidence: the decisive rows it had and needed, and the
    ``--steps`` that would decide it where more steps would."""
    if f.get("decisive") is None:
        return _str(f, "name")
    label = f"{_str(f, 'name')} ({_int(f, 'decisive')} decisive rows, {_int(f, 'required')} needed"
    if f.get("steps"):
        label += f": about --steps {_int(f, 'steps')} decides it"
    elif f.get("output"):
        label += f": {_str(f, 'output')} over more rows decides it"
    return label + ")"


def _undecided(f: Figures) -> str:
    entries = f.get("undecided")
    return ", ".join(
        undecided_label(e)
        for e in (entries if isinstance(entries, list) else ())
        if isinstance(e, dict)
    )


def undecided(q: Quality) -> list[str]:
    """The quality section's gates not decided, each with its evidence (an older
    verdict's said it in the name)."""
    return [undecided_label(e) for e in q.undecided_figures()]
