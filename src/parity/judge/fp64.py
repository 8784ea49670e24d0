"""The fp64 gate of one output (TorchBench / Dynamo ``same``, see
:mod:`parity.judge.numerics`): the target's error against fp64 within ``k`` times the
comparator's + tol/10, or allclose (rtol = tol, atol = tol times the reference's RMS);
cosine similarity with the baseline without a reference."""

from __future__ import annotations

import numpy as np

from parity.arrays import Array, cosine_similarity, f64
from parity.judge.measures import TINY, distribution, min_rtol_at, rmse
from parity.model.findings import Finding
from parity.model.quality import Comparator, ReferenceCheck

COSINE_MIN = 0.99


def gate(
    name: str,
    t: Array,
    b: Array,
    r: Array | None,
    k: float,
    tol: float,
    e: Array | None = None,
) -> ReferenceCheck:
    """One output against the reference (or, without one, target against baseline);
    ``e``: the expected-error run's value, whose error joins the baseline's in the bound."""
    t, b = f64(t).ravel(), f64(b).ravel()

    def fail(code: str) -> ReferenceCheck:
        found = Finding(code=code, severity="blocks")
        return ReferenceCheck(
            name=name, kind="fp64", k=k, tolerance=tol, passed=False, finding=found
        )

    if t.shape != b.shape or (r is not None and r.size != t.size):
        return fail("quality.shapes-differ")
    if not bool(np.isfinite(t).all()):
        return fail("quality.not-finite")
    if r is None:
        cos = float(cosine_similarity(t, b, axis=0)) if t.size else 1.0
        return ReferenceCheck(
            name=name,
            kind="cosine",
            k=k,
            tolerance=tol,
            passed=cos >= COSINE_MIN,
            cosine=cos,
            finding=Finding(code="quality.no-reference", severity="reading"),
        )
    r = f64(r).ravel()
    usable = e is not None and e.size == r.size and bool(np.isfinite(e).all())
    expected = rmse(f64(e).ravel() - r) if e is not None and usable else None
    return _against_reference(name, t, b, r, k, tol, expected)


def _against_reference(
    name: str,
    t: Array,
    b: Array,
    r: Array,
    k: float,
    tol: float,
    expected: float | None,
) -> ReferenceCheck:
    err_t, err_b = np.abs(t - r), np.abs(b - r)
    rmse_t, rmse_b = rmse(err_t), rmse(err_b)
    comparator: Comparator = (
        "expected" if expected is not None and expected > rmse_b else "baseline"
    )
    bound = k * max(rmse_b, expected or 0.0) + tol / 10
    rel = err_t / np.maximum(np.abs(r), TINY)
    # atol scales with the reference's RMS: an absolute tol passes any error on an output
    # much smaller than 1 (early logits of a training run)
    allclose = bool((err_t <= tol * rmse(r) + tol * np.abs(r)).all())
    return ReferenceCheck(
        name=name,
        kind="fp64",
        k=k,
        tolerance=tol,
        passed=rmse_t <= bound or allclose,
        rmse_target=rmse_t,
        rmse_baseline=rmse_b,
        rmse_expected=expected,
        comparator=comparator,
        bound=bound,
        allclose=allclose,
        rule="rmse" if rmse_t <= bound else ("allclose" if allclose else "neither"),
        abs_error=distribution(err_t),
        rel_error=distribution(rel),
        baseline_abs_error=distribution(err_b),
        min_atol=float(err_t.max()) if err_t.size else 0.0,
        min_rtol=float(rel.max()) if rel.size else 0.0,
        min_rtol_at_atol_tol=min_rtol_at(err_t, r, tol),
        cosine=float(cosine_similarity(t, r, axis=0)) if t.size else 1.0,
        values=int(t.size),
    )
