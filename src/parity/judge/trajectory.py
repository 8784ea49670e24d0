"""Quality over the whole run: the loss trajectory and the run's outputs against fp64,
and non-finite values.

The fp64 reference runs the workload's full steps in float64 on the CPU, so every
checkpoint a side produces has a reference value: the training loss of every step, the
outputs ``finish()`` returns (evaluation outputs after training, inference outputs,
generated tokens' prefill logits, each of the first batch at step 0 and again after the
run). Each float output gets the fp64 gate (:func:`parity.judge.numerics.gate`).

The loss trajectory gate, step by step: the comparator's error (the baseline's, or the
expected-error run's where larger) at step i is its largest so far, since rounding
errors compound over training and one step's difference can be small by chance. Until
the comparator has drifted more than ``drift`` (relative, from the tolerance table) from
fp64, each step must satisfy the fp64 rule. From that step on the runs have legitimately
drifted apart: training amplifies rounding until trajectories differ by more than
rounding, and one step's error is noise. There the rule becomes statistical: the mean
error over a window of ``WINDOW`` steps against ``k`` times the comparator's mean.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from parity.arrays import floating
from parity.judge.fp64 import gate
from parity.judge.quality import found
from parity.judge.tolerances import Tolerance
from parity.model.bundle import Bundle
from parity.model.findings import Finding
from parity.model.numerics import NonFiniteOrigin
from parity.model.quality import (
    LOSS_TRAJECTORY,
    TRAJECTORY_RULE,
    Comparator,
    NonFiniteCheck,
    QualityCheck,
    TrajectoryCheck,
    non_finite,
)
from parity.model.roles import ByRole, Role

WINDOW = 8
Losses = Sequence[float | None]


def _first_none(xs: Losses) -> int | None:
    return next((i for i, x in enumerate(xs) if x is None), None)


def _finite(xs: Losses) -> list[float]:
    return [float(x) for x in xs if x is not None]


def _envelope(errors: Sequence[float]) -> list[float]:
    """The running maximum: the largest error so far at each step."""
    out, top = [], 0.0
    for e in errors:
        top = max(top, e)
        out.append(top)
    return out


def _ratios(
    err_t: Sequence[float], env: Sequence[float], ref: Sequence[float], row: Tolerance, start: int
) -> list[float]:
    """Each step's error over the larger of its two bounds (> 1 fails); from ``start`` on,
    windowed means."""
    out = []
    for i, (e, c, r) in enumerate(zip(err_t, env, ref, strict=True)):
        if i >= start:
            lo = max(start, i - WINDOW + 1)
            e = sum(err_t[lo : i + 1]) / (i + 1 - lo)
            c = sum(env[lo : i + 1]) / (i + 1 - lo)
            r = sum(abs(x) for x in ref[lo : i + 1]) / (i + 1 - lo)
        bound = max(row.k * c + row.tol / 10, 2 * row.tol * abs(r))  # allclose: atol tol*|r|
        out.append(e / bound)
    return out


def loss_trajectory(
    base: Losses, target: Losses, ref: Losses, expected: Losses | None, row: Tolerance
) -> TrajectoryCheck:
    """The losses step by step against the fp64 reference's (see the module's docstring)."""
    head = TrajectoryCheck(
        name=LOSS_TRAJECTORY,
        passed=False,
        tolerance=row.tol,
        k=row.k,
        steps=len(ref),
        comparator="baseline",
        rule=TRAJECTORY_RULE,
    )
    problem = _problem(base, target, ref)
    if problem is not None:
        return problem(head)
    b, t, r = _finite(base), _finite(target), _finite(ref)
    w = _finite(expected) if expected is not None and _first_none(expected) is None else None
    if w is not None and len(w) != len(r):
        w = None
    err_b = [abs(x - y) for x, y in zip(b, r, strict=True)]
    err_w = [abs(x - y) for x, y in zip(w, r, strict=True)] if w is not None else None
    comparator: Comparator = "expected" if err_w and err_w[-1] > err_b[-1] else "baseline"
    env = _envelope([max(x, y) for x, y in zip(err_b, err_w or err_b, strict=True)])
    drift = next(
        (i for i, (c, x) in enumerate(zip(env, r, strict=True)) if c > row.drift * abs(x)), None
    )
    err_t = [abs(x - y) for x, y in zip(t, r, strict=True)]
    ratios = _ratios(err_t, env, r, row, len(r) if drift is None else drift)
    worst = max(range(len(ratios)), key=lambda i: ratios[i])
    failing = next((i for i, x in enumerate(ratios) if x > 1), None)
    return replace(
        head,
        passed=failing is None,
        comparator=comparator,
        first_failing_step=failing,
        worst_step=worst,
        worst_ratio=ratios[worst],
        drift_from_step=drift,
        drift=None if drift is None else _drift(drift, row),
        final_error_target=err_t[-1],
        final_error_comparator=env[-1],
    )


def _problem(
    base: Losses, target: Losses, ref: Losses
) -> Callable[[TrajectoryCheck], TrajectoryCheck] | None:
    """Why the curves cannot be gated step by step: how the check says so."""
    if len(target) != len(ref) or len(base) != len(ref) or not ref:
        lengths = found(
            "quality.curve-lengths", baseline=len(base), target=len(target), fp64=len(ref)
        )
        return lambda c: replace(c, finding=lengths)
    if (i := _first_none(ref)) is not None:
        unusable = found("quality.reference-not-finite", "context", step=i)
        return lambda c: replace(c, finding=unusable, gated=False, passed=None)
    if (i := _first_none(target)) is not None:
        at, nan = i, found("quality.loss-not-finite", role="target", step=i)
        return lambda c: replace(c, finding=nan, first_failing_step=at)
    if (i := _first_none(base)) is not None:
        alone = found("quality.no-comparator", step=i)
        return lambda c: replace(c, finding=alone)
    return None


def _drift(step: int, row: Tolerance) -> Finding:
    """From ``step`` the runs have drifted apart: the windowed mean error is gated."""
    return found("quality.drift", "reading", step=step, drift=row.drift, window=WINDOW, k=row.k)


def output_gates(
    a: Bundle, b: Bundle, ref: Bundle, exp: Bundle | None, row: Tolerance
) -> list[QualityCheck]:
    """Every float output the run produced (``finish()``) against the fp64 reference's."""
    ta, tb, tr = a.output_tensors(), b.output_tensors(), ref.output_tensors()
    te = exp.output_tensors() if exp is not None else {}
    kinds = a.outputs.outputs if a.outputs is not None else {}
    gates: list[QualityCheck] = []
    for name in sorted(set(ta) & set(tb) & set(tr)):
        if not floating(tr[name]):
            continue  # tokens: against the baseline's, with the logits margin
        check = gate(
            f"{name} against fp64", tb[name], ta[name], tr[name], row.k, row.tol, te.get(name)
        )
        summary = kinds.get(name)
        gates.append(check if summary is None else replace(check, output_kind=summary.kind))
    return gates


def run_gates(
    a: Bundle, b: Bundle, ref: Bundle, exp: Bundle | None, row: Tolerance
) -> list[QualityCheck]:
    """The whole run against fp64: the loss trajectory and every float output (an ok
    reference, and an ok expected-error run, hold both: ``parity.bundle.REQUIRED``)."""
    gates: list[QualityCheck] = []
    if ref.losses and (a.losses or b.losses):
        expected = exp.losses if exp is not None else None
        gates.append(loss_trajectory(a.losses, b.losses, ref.losses, expected, row))
    return gates + output_gates(a, b, ref, exp, row)


# -- non-finite values ---------------------------------------------------------------------------


def _nonfinite(role: Role, bundle: Bundle) -> NonFiniteCheck | None:
    outputs = bundle.outputs
    if outputs is None:
        return None
    bad_loss = _first_none(outputs.losses)
    bad_outputs = sorted(name for name, s in outputs.outputs.items() if not s.finite)
    if bad_loss is None and not bad_outputs:
        return None
    what = ("loss" if bad_loss is not None else f"output {bad_outputs[0]}") + "".join(
        f", output {name}" for name in bad_outputs[bad_loss is None :]
    )
    origin = outputs.nonfinite or NonFiniteOrigin(found=False)
    step = origin.step if origin.found else bad_loss
    return NonFiniteCheck(
        name=non_finite(role),
        passed=False,
        side=role,
        what=what,
        step=step,
        module=origin.module if origin.found else None,
        where=origin.where if origin.found else None,
        finding=_where(origin, step),
    )


def _where(origin: NonFiniteOrigin, step: int | None) -> Finding:
    """Where a value first went non-finite (``step`` None: after the steps, in finish)."""
    if not origin.found:  # why the module is unknown: the replay's own word, if it ran
        return found("quality.nonfinite-unknown", step=step, why=origin.detail)
    if origin.where == "update":
        return found("quality.nonfinite-update", step=step, parameter=origin.parameter)
    return found("quality.nonfinite-module", step=step, module=origin.module)


def nonfinite_checks(sides: ByRole[Bundle]) -> list[QualityCheck]:
    """A failing check per side whose loss or output holds NaN or Inf."""
    return [c for role, bundle in sides.items() if (c := _nonfinite(role, bundle)) is not None]
