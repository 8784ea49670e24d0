"""Localisation: the first module whose error the target's precision does not explain.

Every side records each module's output (and first tensor input) on the probe's batch;
each is compared with the fp64 reference's, as a relative RMS error. Under reduced
precision every matmul has error, so comparing with an fp32 baseline's error would name
the first Linear of any bf16 target. Instead each module's error is compared with what
explains it:

- the *expected* error: what the target's precision alone does there, measured on the
  CPU by the expected-error run (the same frozen weights and batch under the same
  autocast or emulation profile), or the baseline's error where that is larger;
- scaled up by how much more error the target's *input* to the module carried than the
  expected run's input did (never down): error inherited from upstream is no fault here.

A module diverges when its error exceeds ``factor`` times that (``factor`` from
:mod:`parity.judge.tolerances`), or when its output is the first that is not finite.
Modules are taken in execution order of their completion, so a submodule comes before
the module that contains it: a fault inside a Linear names the Linear, a fault in a
container's own functional code (attention's softmax) names the container.

The table comes from the pass after the run where both sides recorded one (the run's own
model, restored to its starting weights, so a fault that starts at step k shows), else
from the first forward on fresh weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from parity.arrays import Arrays
from parity.judge.measures import finite_or_none, relative
from parity.judge.tolerances import Tolerance
from parity.model.bundle import Bundle
from parity.model.numerics import LayerRecord
from parity.model.quality import EXPLAINED_FLOOR, LayerRow, Localisation

FLOOR = EXPLAINED_FLOOR
TOP = 5
AFTER_RUN = "after_run."


@dataclass(frozen=True)
class _Errors:
    """One module's errors (inf: not finite; None: not recorded)."""

    base: float
    target: float
    target_in: float | None
    expected: float | None
    expected_in: float | None
    base_in: float | None


def _error(side: Arrays, key: str, ref: Arrays, ref_key: str) -> float | None:
    if key not in side or ref_key not in ref:
        return None
    return relative(side[key], ref[ref_key])


def _errors(
    name: str, ta: Arrays, tb: Arrays, tr: Arrays, te: Arrays | None, prefix: str
) -> _Errors | None:
    out, inp = f"layer.out.{name}", f"layer.in.{name}"
    base = _error(ta, prefix + out, tr, out)
    target = _error(tb, prefix + out, tr, out)
    if base is None or target is None:
        return None
    return _Errors(
        base=base,
        target=target,
        target_in=_error(tb, prefix + inp, tr, inp),
        base_in=_error(ta, prefix + inp, tr, inp),
        expected=_error(te, out, tr, out) if te is not None else None,
        expected_in=_error(te, inp, tr, inp) if te is not None else None,
    )


def _largest_finite(*values: float | None) -> float:
    return max((v for v in values if v is not None and math.isfinite(v)), default=0.0)


def _judged(e: _Errors, factor: float) -> tuple[LayerRow, bool]:
    """The row's figures, and whether the module diverges."""
    expected = _largest_finite(e.base, e.expected)
    expected_in = _largest_finite(e.base_in, e.expected_in)
    given = e.target_in if e.target_in is not None else 0.0
    scale = 1.0 if given <= max(expected_in, FLOOR) else given / max(expected_in, FLOOR)
    explained = expected * scale if math.isfinite(scale) else math.inf
    if math.isfinite(e.target):
        excess = 0.0 if math.isinf(explained) else e.target / (factor * explained + FLOOR)
        diverges = excess > 1
    else:  # not finite: the origin when its input was finite
        excess, diverges = math.inf, math.isfinite(given)
    amplification = e.target / max(given, FLOOR) if math.isfinite(given) else 0.0
    row = LayerRow(
        module="",
        leaf=False,
        type=None,
        baseline_error=finite_or_none(e.base),
        target_error=finite_or_none(e.target),
        target_input_error=finite_or_none(e.target_in),
        amplification=finite_or_none(amplification),
        excess=finite_or_none(excess),
        expected_error=finite_or_none(e.expected),
        expected_input_error=finite_or_none(e.expected_in),
        explained=finite_or_none(explained),
    )
    return row, diverges


def localise(
    layers: Sequence[LayerRecord],
    ta: Arrays,
    tb: Arrays,
    tr: Arrays,
    te: Arrays | None,
    row: Tolerance,
    *,
    prefix: str = "",
) -> tuple[list[LayerRow], list[LayerRow]]:
    """Every module's row, and the diverging ones, in execution order."""
    rows: list[LayerRow] = []
    diverging: list[LayerRow] = []
    for layer in layers:
        errors = _errors(layer.name, ta, tb, tr, te, prefix)
        if errors is None:
            continue
        judged, diverges = _judged(errors, row.factor)
        judged = _named(judged, layer)
        rows.append(judged)
        if diverges:
            diverging.append(judged)
    return rows, diverging


def _named(row: LayerRow, layer: LayerRecord) -> LayerRow:
    return replace(row, module=layer.name, leaf=layer.leaf, type=layer.type)


def _after_run(a: Bundle, b: Bundle) -> bool:
    return all(
        x.capture is not None and x.capture.after_run is not None and not x.capture.after_run.error
        for x in (a, b)
    )


def localise_run(
    a: Bundle, b: Bundle, ref: Bundle, exp: Bundle | None, row: Tolerance, *, judged: bool = True
) -> Localisation | None:
    """The localisation of a comparison (None without per-module captures); not
    ``judged``: the table only, no module named (a reduced-precision target without its
    expected-error run, whose every matmul would exceed an fp32 baseline's error)."""
    if ref.capture is None or ref.capture.error or not ref.capture.layers:
        return None
    after = _after_run(a, b)
    if not after and any(x.capture is None or x.capture.error for x in (a, b)):
        return None
    usable = exp is not None and exp.capture is not None and not exp.capture.error
    te = exp.capture_tensors() if exp is not None and usable else None
    rows, diverging = localise(
        ref.capture.layers,
        a.capture_tensors(),
        b.capture_tensors(),
        ref.capture_tensors(),
        te,
        row,
        prefix=AFTER_RUN if after else "",
    )
    if not judged:
        diverging = []
    first = diverging[0] if diverging else None
    top = sorted((r for r in diverging if r.leaf), key=lambda r: -(r.amplification or math.inf))[
        :TOP
    ]
    expected_run = str(exp.side) if te is not None and exp is not None else None
    return Localisation(
        table=tuple(rows),
        first_divergence=first.module if first else None,
        first_divergence_row=first,
        top_amplification=tuple(r.module for r in top),
        rule="numerics.localised" if judged else "numerics.not-localised",
        capture="after the run" if after else "first forward",
        factor=row.factor,
        expected_run=expected_run,
        precision=row.precision,
    )
