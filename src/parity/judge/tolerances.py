"""Every tolerance of the quality verdict, per precision, in one table.

========  ====  =====  =======  ==========  =====  ======
format    k     tol    outputs  final loss  drift  factor
========  ====  =====  =======  ==========  =====  ======
fp32      2     1e-4   1e-3     1e-3        1e-3   4
tf32      2     1e-3   5e-2     2e-2        1e-2   4
fp16      3     1e-3   5e-2     2e-2        1e-2   4
bf16      3     1e-2   5e-2     2e-2        1e-2   4
========  ====  =====  =======  ==========  =====  ======

- ``k`` and ``tol``: the fp64 gate (TorchBench / Dynamo ``same``): the target passes when
  ``rmse(target, fp64) <= k * rmse(comparator, fp64) + tol / 10`` or
  ``allclose(target, fp64, atol=tol * rms(fp64), rtol=tol)``; set by the format the
  target's matmuls ran in;
- ``outputs`` and ``final loss``: the direct checks, target against baseline, by the
  looser of the two sides' formats (they decide only where no fp64 reference exists);
- ``drift``: the relative loss difference between the comparator and fp64 beyond which
  the runs have legitimately drifted apart, and the loss trajectory gate turns statistical;
- ``factor``: localisation: a module diverges when its error exceeds this many times what
  the target's precision and its input explain.
"""

from __future__ import annotations

from dataclasses import dataclass

from parity.model.precision import spec_precision
from parity.model.spec import SideSpec


@dataclass(frozen=True, kw_only=True, slots=True)
class Tolerance:
    """One row of the table (see the module's docstring)."""

    precision: str
    k: float
    tol: float
    outputs: float
    final_loss: float
    drift: float
    factor: float = 4.0


TABLE: dict[str, Tolerance] = {
    row.precision: row
    for row in (
        Tolerance(precision="fp32", k=2.0, tol=1e-4, outputs=1e-3, final_loss=1e-3, drift=1e-3),
        Tolerance(precision="tf32", k=2.0, tol=1e-3, outputs=5e-2, final_loss=2e-2, drift=1e-2),
        Tolerance(precision="fp16", k=3.0, tol=1e-3, outputs=5e-2, final_loss=2e-2, drift=1e-2),
        Tolerance(precision="bf16", k=3.0, tol=1e-2, outputs=5e-2, final_loss=2e-2, drift=1e-2),
    )
}


def of(precision: str) -> Tolerance:
    """The row of a format (fp32's for one the table does not know)."""
    return TABLE.get(precision, TABLE["fp32"])


def direct(a: SideSpec, b: SideSpec) -> dict[str, float]:
    """The direct checks' tolerances: the looser of the two sides' rows."""
    rows = [of(spec_precision(a)), of(spec_precision(b))]
    return {
        "outputs_rel_rmse": max(r.outputs for r in rows),
        "final_loss_rel": max(r.final_loss for r in rows),
    }
