"""How many steps a timing process runs: past its warm-up, then as many steady steps as the
interval over processes can use, and no more.

A comparison's first process per side is its quality run (the frozen workload's steps,
all of them). The processes after it only time: each is reduced to the median of its
steady steps, and the ratio's interval is over processes. A process then costs a fixed
part ``c_p`` (start, load, the first step, warm-up) and ``c_s`` per steady step; its
log median varies by the process-to-process spread ``s_p`` and, inside it, by
``s_w^2 / n`` with ``s_w^2 = (pi / 2) cv^2`` (the large-sample variance of a median of
``n`` steps of relative spread ``cv``, normal steps). For a fixed time the variance of
the mean over processes is least at (Cochran 1977, *Sampling Techniques*, 3rd ed.,
sec. 10.6, the optimum subsample size of two-stage sampling)

    n = sqrt(c_p * s_w^2 / (c_s * s_p^2))

steady steps, never fewer than :data:`MIN_STEADY` (what :func:`detect_steady` needs to
run MSER on the process's own steps, and 10 sections of one step for a lone process's
noise) nor than the warm-up (so that MSER, which truncates at most half, can pass it).
Slow steps make ``c_s`` large and ``n`` small: more, shorter processes. ``s_p`` is not
known before two processes a side have run: :data:`PRIOR_SPREAD` is assumed for the first
timing processes; after the second round the spread measured between processes (pooled
over the sides), where larger, sizes the rest (a loaded machine: fewer steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from parity.stats.samples import _as_array

#: steady steps a timing process runs at least: ``detect_steady`` runs MSER from
#: ``2 * min_steady`` (10) steps on, below which it only drops a slow first step
MIN_STEADY = 10
#: process-to-process spread (sd of log medians) assumed when sizing: the low end of what
#: fresh processes of the built-ins show on a quiet CPU (a few percent)
PRIOR_SPREAD = 0.02
#: a robust standard deviation from an interquartile range (normal data)
IQR_SD = 1.349


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessSize:
    """Steps per timing process: ``1 + warmup + steady``, at most the workload's own."""

    steps: int
    warmup: int
    steady: int
    workload_steps: int
    reason: str

    @property
    def shortened(self) -> bool:
        return self.steps < self.workload_steps


def process_steps(
    steady: Sequence[float],
    *,
    warmup: int,
    fixed_s: float,
    workload_steps: int,
    spread: float = PRIOR_SPREAD,
    measured: bool = False,
) -> ProcessSize:
    """The steps of a timing process, from the quality run's steady step times (seconds),
    its warm-up steps after the first (MSER's truncation), and its fixed cost per process
    (start, load, the first step and warm-up, seconds). See the module for the rule.
    ``measured``: ``spread`` was measured between processes (else it is assumed)."""
    x = _as_array(steady, "the quality run's steady steps")
    if warmup < 0 or fixed_s < 0 or workload_steps < 1 or not spread > 0:
        raise ValueError("warmup and fixed_s must be >= 0, workload_steps >= 1, spread > 0")
    step_s = float(np.median(x))
    q1, q3 = np.percentile(np.log(x), [25, 75])
    cv = float(q3 - q1) / IQR_SD
    within = math.pi / 2 * cv * cv
    optimum = math.sqrt(fixed_s * within / (step_s * spread * spread)) if step_s > 0 else 0.0
    floor = max(MIN_STEADY, warmup)
    n = max(floor, math.ceil(optimum))
    source = "measured" if measured else "assumed"
    basis = (
        f"1 first step + {warmup} warm-up (the quality run's, MSER) + {n} steady: "
        f"sqrt(c_p s_w^2 / (c_s s_p^2)) = {optimum:.1f} (Cochran 1977, sec. 10.6) with a "
        f"process's fixed cost c_p {fixed_s:.2f} s, a step c_s {step_s * 1e3:.3g} ms, step "
        f"noise {cv:.1%} and processes {spread:.1%} apart ({source}), at least {floor}"
    )
    steps = 1 + warmup + n
    if steps >= workload_steps:
        return ProcessSize(
            steps=workload_steps,
            warmup=warmup,
            steady=max(workload_steps - 1 - warmup, 0),
            workload_steps=workload_steps,
            reason=f"all {workload_steps} of the workload's steps: the rule asks {steps} ({basis})",
        )
    return ProcessSize(
        steps=steps, warmup=warmup, steady=n, workload_steps=workload_steps, reason=basis
    )
