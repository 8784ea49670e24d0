"""Quality checks between two sides directly: the loss curve and the outputs.

These compare the target with the baseline, with a tolerance set by the lower precision
of the two sides (``tolerances``, from the table in :mod:`parity.judge.tolerances`): the
relative RMSE of each float output and the relative difference of the final training
loss. They decide where no whole-run fp64 reference exists; with one, the fp64 gates
decide and these are reported. Integer outputs compared here (the checks' runs) are
reported as an agreement rate and the first differing position; a comparison gates
generated tokens with their logits margins (:mod:`parity.judge.agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from parity.arrays import Array, cosine_similarity, f64, floating
from parity.judge.measures import rmse
from parity.judge.tolerances import direct
from parity.model.bundle import Bundle
from parity.model.codec import Json
from parity.model.findings import Finding, Severity
from parity.model.numerics import OutputKind
from parity.model.quality import (
    Convergence,
    ConvergenceRun,
    Determinism,
    LossCheck,
    OutputCheck,
    TokensCheck,
)
from parity.model.spec import SideSpec


def found(code: str, severity: Severity = "blocks", **figures: Json) -> Finding:
    """A quality check's finding (``parity.report.words`` says it)."""
    return Finding(code=code, severity=severity, figures=figures)


def tolerances(a: SideSpec, b: SideSpec) -> dict[str, float]:
    """The direct checks' tolerances: relative RMSE of outputs, final-loss difference."""
    return direct(a, b)


def _tokens(label: str, base: Array, target: Array) -> TokensCheck:
    same = np.asarray(base == target)
    flat = same.reshape(same.shape[0], -1) if same.ndim > 1 else same.reshape(1, -1)
    first = tuple(int(np.flatnonzero(~row)[0]) if not bool(row.all()) else None for row in flat)
    return TokensCheck(
        name=label,
        gated=False,
        passed=None,
        agreement=float(same.mean()) if same.size else 1.0,
        first_difference=first,
        finding=found("quality.integers-reported", "context"),
    )


def compare_output(
    name: str,
    base: Array,
    target: Array,
    tol: float,
    output_kind: OutputKind | None = None,
) -> OutputCheck | TokensCheck:
    """One named output, target against baseline; ``output_kind`` (logits, embeddings,
    tokens, hidden) is carried into the check."""
    check = _compare_output(f"output {name}", base, target, tol)
    return replace(check, output_kind=output_kind)


def _compare_output(
    label: str, base: Array, target: Array, tol: float
) -> OutputCheck | TokensCheck:
    if base.shape != target.shape:
        shapes = list(base.shape), list(target.shape)
        differ = found("quality.shapes-differ", baseline=shapes[0], target=shapes[1])
        return OutputCheck(name=label, passed=False, finding=differ)
    if not floating(base):
        return _tokens(label, base, target)
    b, t = f64(base), f64(target)
    if not bool(np.isfinite(t).all()):
        return OutputCheck(name=label, passed=False, finding=found("quality.not-finite"))
    diff = np.abs(t - b)
    rms, err = rmse(b), rmse(diff)
    rel = err / rms if rms > 0 else (0.0 if err == 0 else math.inf)
    cosine = float(cosine_similarity(b.ravel(), t.ravel(), axis=0)) if b.size else 1.0
    return OutputCheck(
        name=label,
        passed=rel <= tol,
        rel_rmse=rel if math.isfinite(rel) else None,
        finding=None if math.isfinite(rel) else found("quality.baseline-zeros"),
        tolerance=tol,
        max_abs=float(diff.max()) if diff.size else 0.0,
        mean_abs=float(diff.mean()) if diff.size else 0.0,
        cosine=cosine,
    )


#: the share of the baseline's steps a reduced-precision target may lag behind it
LAG = 0.1
#: a curve's noise (a robust sigma) counted this many times into the tolerance
NOISE_K = 3.0


def curve_noise(losses: Sequence[float]) -> float | None:
    """The curve's own noise over its second half, relative to its level: a robust sigma
    (1.4826 x the median absolute deviation) of its second differences, which a steady
    trend leaves out, divided by sqrt(6) (the variance of a second difference of white
    noise is six times its own). None under 8 steps."""
    tail = list(losses[len(losses) // 2 :])
    if len(tail) < 4 or len(losses) < 8:
        return None
    second = np.diff(np.asarray(tail, dtype=np.float64), n=2)
    level = float(np.median(np.abs(tail)))
    if level <= 0:
        return None
    mad = float(np.median(np.abs(second - np.median(second))))
    return float(1.4826 * mad / np.sqrt(6.0) / level)


def _progress(losses: Sequence[float]) -> float | None:
    """How much the curve improved over its last tenth of steps, relative to its end: a
    target that ends that little behind trained the same, a few steps later (what a
    reduced precision's rounding costs a curve still descending)."""
    if len(losses) < 10 or losses[-1] == 0:
        return None
    back = losses[-1 - max(1, round(LAG * len(losses)))]
    return max(0.0, (back - losses[-1]) / abs(losses[-1]))


def compare_losses(
    base: Sequence[float | None],
    target: Sequence[float | None],
    tol: float,
    *,
    reduced: bool = False,
) -> LossCheck:
    """The loss curve, target against baseline, by its final step's relative difference.
    The tolerance is the precision's own (``tol``), widened by the curve itself where that
    says more: its detrended noise (``NOISE_K`` x), and, where a side ran in a reduced
    precision (``reduced``), the baseline's improvement over its last tenth of steps."""

    def fail(finding: Finding) -> LossCheck:
        return LossCheck(name="loss curve", tolerance=tol, passed=False, finding=finding)

    if len(base) != len(target) or not base:
        return fail(found("quality.curve-lengths", baseline=len(base), target=len(target)))
    if any(x is None for x in target):
        first = next(i for i, x in enumerate(target) if x is None)
        return fail(found("quality.loss-not-finite", role="target", step=first))
    if any(x is None for x in base):
        return fail(found("quality.loss-not-finite", role="baseline"))
    b = [float(x) for x in base if x is not None]
    t = [float(x) for x in target if x is not None]
    rel = [abs(y - x) / max(abs(x), 1e-12) for x, y in zip(b, t, strict=True)]
    noise = curve_noise(b)
    progress = _progress(b) if reduced else None
    tol = max(tol, NOISE_K * (noise or 0.0), progress or 0.0)
    outside = next((i for i, r in enumerate(rel) if r > tol), None)
    return LossCheck(
        name="loss curve",
        tolerance=tol,
        progress_rel=progress,
        noise_rel=noise,
        passed=rel[-1] <= tol,
        final_rel=rel[-1],
        max_rel=max(rel),
        first_step_outside_band=outside,
        final_baseline=b[-1],
        final_target=t[-1],
        final_ratio=t[-1] / b[-1] if b[-1] else None,
    )


def determinism(repeats: Sequence[Bundle]) -> Determinism:
    """Outputs and losses of a side's first two repeats: bitwise equal, or how far apart.
    The second is a timing process: sized shorter than the quality run, it is compared
    on the steps it ran (its losses against the first's, its outputs not at all: they
    come after fewer steps); where it ran them all, on the outputs it hands over (a
    generation loop's timing process hands over its first step's tokens and logits, not
    the quality run's decoding of every prompt again), each of which the first must have."""
    if len(repeats) < 2:
        return Determinism(checked=False, finding=found("quality.one-repeat", "context"))
    a, b = repeats[0], repeats[1]
    common = min(len(a.losses), len(b.losses))
    shorter = len(a.losses) != len(b.losses)
    out_a, out_b = ({}, {}) if shorter else (a.output_tensors(), b.output_tensors())
    max_diff = 0.0
    equal = a.losses[:common] == b.losses[:common] and out_b.keys() <= out_a.keys()
    for name in sorted(out_a.keys() & out_b.keys()):
        x, y = out_a[name], out_b[name]
        if x.shape != y.shape:
            changed = found("quality.repeat-shape", "context", output=name)
            return Determinism(checked=True, bitwise_equal=False, finding=changed)
        if not np.array_equal(x, y):
            equal = False
            max_diff = max(max_diff, float(np.abs(f64(x) - f64(y)).max()))
    losses_a = [v for v in a.losses[:common] if v is not None]
    losses_b = [v for v in b.losses[:common] if v is not None]
    loss_diff = max((abs(x - y) for x, y in zip(losses_a, losses_b, strict=False)), default=0.0)
    partial = None
    if shorter:
        longest = max(len(a.losses), len(b.losses))
        partial = found("quality.repeat-shorter", "context", steps=common, of=longest)
    elif out_b.keys() < out_a.keys():
        partial = found("quality.repeat-outputs", "context", outputs=[*map(str, sorted(out_b))])
    return Determinism(
        checked=True,
        bitwise_equal=equal,
        max_abs_output_diff=max_diff,
        max_abs_loss_diff=loss_diff,
        compared=(a.path.name, b.path.name),
        finding=partial,
    )


def convergence(repeats: Sequence[Bundle], target_loss: float) -> Convergence:
    """MLPerf style: steps and time to the target loss per repeat; never reaching it is a
    non-converged run. Time counts every step from the first (compile and warm-up too)."""
    runs = []
    for bundle in repeats:
        times = bundle.metrics.step_samples_s if bundle.metrics else ()
        step = next(
            (i for i, v in enumerate(bundle.losses) if v is not None and v <= target_loss), None
        )
        runs.append(
            ConvergenceRun(
                repeat=bundle.path.name,
                converged=step is not None,
                steps=None if step is None else step + 1,
                time_s=None if step is None else float(sum(times[: step + 1])),
            )
        )
    done = [r.time_s for r in runs if r.time_s is not None]
    return Convergence(
        target_loss=target_loss,
        runs=tuple(runs),
        success_rate=len(done) / len(runs) if runs else 0.0,
        mean_time_s=sum(done) / len(done) if done else None,
    )
