"""Numerics against an fp64 reference: the fp64 gate, the probe's gates, the section.

The gate (TorchBench / Dynamo ``same``): the target passes an output when

    rmse(target, fp64) <= k * rmse(comparator, fp64) + tol / 10

or when ``allclose(target, fp64, atol=tol * rms(fp64), rtol=tol)`` holds (an atol
relative to the output's size: an absolute one would pass any error on small outputs).
``k`` and ``tol`` come from the table in :mod:`parity.judge.tolerances`, by the format
the target's matmuls and convolutions ran in (:func:`effective_precision`: TF32 where
its device flags say so). The comparator's error is the baseline's, or, where larger,
the error that the target's precision alone makes: the *expected-error run*, the same
workload on the CPU at the target's precision (autocast bf16/fp16, or the emulation
profile). A bf16 target is so judged against what bf16 does, not against an fp32
baseline's far smaller error. Where no fp64 value exists, cosine similarity >= 0.99 is
the fallback. Each gate reports the error distribution and the smallest atol (at rtol
0) and rtol (at atol 0) that would pass.

The section gathers the gates of the whole run (:mod:`parity.judge.trajectory`), the
probe's gates on fresh weights (outputs and gradients after the first backward) and the
localisation (:mod:`parity.judge.localise`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from parity.arrays import Array, Arrays, f64
from parity.judge import tolerances
from parity.judge.fp64 import gate
from parity.judge.localise import localise_run
from parity.judge.measures import finite_or_none, relative
from parity.judge.tolerances import Tolerance
from parity.judge.trajectory import run_gates
from parity.model.bundle import Bundle
from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.precision import (
    bundle_autocast_policy,
    bundle_precision,
    expected_side,
)
from parity.model.quality import (
    GRADIENTS,
    MODULES,
    Localisation,
    LocalisationCheck,
    NumericsSection,
    ParameterError,
    QualityCheck,
    ReferenceCheck,
    ReferenceNote,
    first_forward,
)
from parity.model.spec import SideSpec

TOP = 5


def _gradients(
    a: Bundle, ta: Arrays, tb: Arrays, tr: Arrays | None, te: Arrays | None, row: Tolerance
) -> ReferenceCheck | None:
    names = sorted(n for n in (a.capture.gradients if a.capture else {}) if f"grad.{n}" in tb)
    if not names:
        return None

    def cat(t: Arrays | None) -> Array | None:
        if t is None or not all(f"grad.{n}" in t for n in names):
            return None
        return np.concatenate([f64(t[f"grad.{n}"]).ravel() for n in names])

    gt, gb, gref = cat(tb), cat(ta), cat(tr)
    assert gt is not None and gb is not None  # every name is in both
    check = gate(GRADIENTS, gt, gb, gref, row.k, row.tol, cat(te))
    if tr is None or gref is None:
        return check
    per = [(n, relative(tb[f"grad.{n}"], tr[f"grad.{n}"])) for n in names]
    worst = sorted(per, key=lambda x: -x[1])[:TOP]
    return replace(
        check,
        worst_parameters=tuple(
            ParameterError(parameter=n, rel_error=finite_or_none(e)) for n, e in worst
        ),
    )


def probe_gates(
    a: Bundle, b: Bundle, ref: Bundle | None, exp: Bundle | None, row: Tolerance
) -> list[QualityCheck]:
    """The probe's outputs and gradients on fresh weights against fp64."""
    if a.capture is None or b.capture is None or a.capture.error or b.capture.error:
        return []
    ta, tb = a.capture_tensors(), b.capture_tensors()
    tr = ref.capture_tensors() if ref is not None else None
    te = exp.capture_tensors() if exp is not None else None
    gates: list[QualityCheck] = [
        replace(
            gate(
                first_forward(name),
                tb[key],
                ta[key],
                (tr or {}).get(key),
                row.k,
                row.tol,
                (te or {}).get(key),
            ),
            output_kind=summary.kind,  # logits, embeddings...
        )
        for name, summary in sorted(a.capture.outputs.items())
        if (key := f"output.{name}") in ta and key in tb
    ]
    grads = _gradients(a, ta, tb, tr, te, row)
    if grads is not None:
        gates.append(grads)
    return gates


def _notes(
    ref: Bundle | None, exp: Bundle | None, want: SideSpec | None
) -> tuple[Bundle | None, ReferenceNote, Bundle | None, ReferenceNote | None]:
    """The usable reference and expected-error run, and a note on each."""
    if ref is None or not ref.ok:
        ref_note = ReferenceNote(available=False, finding=_note("numerics.no-reference"))
        ref = None
    else:
        ref_note = ReferenceNote(available=True, bundle=ref.path.name)
    if want is None:
        return ref, ref_note, None, None
    if exp is None or not exp.ok:
        why = _note("numerics.no-expected", want=str(want))
        return ref, ref_note, None, ReferenceNote(available=False, finding=why)
    if exp.side != want:
        why = _note("numerics.expected-differs", ran=str(exp.side), want=str(want))
        return ref, ref_note, None, ReferenceNote(available=False, finding=why)
    return ref, ref_note, exp, ReferenceNote(available=True, bundle=exp.path.name)


def _note(code: str, **figures: Json) -> Finding:
    return Finding(code=code, severity="reading", figures=figures)


def judge_numerics(
    a: Bundle, b: Bundle, ref: Bundle | None, exp: Bundle | None = None
) -> NumericsSection:
    """The numerics section: the whole run's and the probe's fp64 gates, and localisation
    (``b`` the target; ``exp`` the expected-error run at its precision)."""
    precision = bundle_precision(b)
    row = tolerances.of(precision)
    want = expected_side(b.side, precision, bundle_autocast_policy(b))
    ref, ref_note, exp, exp_note = _notes(ref, exp, want)
    head = NumericsSection(precision=precision, k=row.k, tolerance=row.tol, available=False)
    gates = run_gates(a, b, ref, exp, row) if ref is not None else []
    gates += probe_gates(a, b, ref, exp, row)
    if not gates:
        why = (a.capture and a.capture.error) or (b.capture and b.capture.error)
        if why:  # the probe's own error
            return replace(head, reason=why)
        return replace(head, finding=_note("numerics.no-probe"))
    unexplained = ref is not None and want is not None and exp is None
    if unexplained:  # what the precision alone does is unknown: an fp32 bound is no bound
        gates = [_reported(g, precision) if g.kind in ("fp64", "trajectory") else g for g in gates]
    layers = localise_run(a, b, ref, exp, row, judged=not unexplained) if ref is not None else None
    if layers is not None and not unexplained:
        gates.append(localisation_check(layers))
    gated = [g for g in gates if g.gated]
    return replace(
        head,
        reference=ref_note,
        expected=exp_note,
        gates=tuple(gates),
        available=True,
        passed=all(g.passed for g in gated) if gated else None,
        layers=layers,
    )


def localisation_check(layers: Localisation) -> LocalisationCheck:
    """The localisation as a gate: a module whose error its precision and input do not
    explain fails the quality verdict (the outputs' gates bound the sum of every module's
    error; a fault in one layer may stay inside that sum and still be a fault)."""
    first = layers.first_divergence_row
    return LocalisationCheck(
        name=MODULES,
        passed=first is None,
        module=layers.first_divergence,
        excess=first.excess if first is not None else None,
        factor=layers.factor,
        capture=layers.capture,
    )


def _reported(check: QualityCheck, precision: str) -> QualityCheck:
    """A check reported, not gated: what the precision alone does is unknown without the
    expected-error run, and the baseline's error is no bound for it (a check that says
    what it found already keeps its finding)."""
    if check.finding is not None or check.detail is not None:
        return replace(check, gated=False)
    why = Finding(code="numerics.ungated", severity="reading", figures={"precision": precision})
    return replace(check, gated=False, finding=why)
