"""Statistics behind parity's speed verdict: figures that carry their own uncertainty.

A leaf package: numpy and the standard library only, no other parity imports.

- :func:`summarize` -> :class:`Summary`: median, IQR and friends of a sample of step times,
  judged like torch.utils.benchmark's ``Measurement`` (IQR/median > 10% is noisy, > 25%
  gross interference).
- :func:`detect_steady` -> :class:`SteadyState`: where warm-up ends, by MSER-5 (White 1997;
  White, Cobb & Spratt 2000): truncate the first ``d`` points that minimise the squared
  standard error of the remaining mean, computed on batch means of 5.
- :class:`Processes`: one side's fresh processes, each reduced to the median of its steady
  steps (its *location*).
- :func:`ratio_ci` -> :class:`RatioCI`: the time ratio target/baseline with a Welch t
  interval on the log locations (Welch 1947; Satterthwaite 1946 degrees of freedom), or,
  where the sides ran in rounds back to back (at least :data:`PAIRED_FROM`), the paired t
  on each round's log ratio: the rounds are blocks (Box, Hunter & Hunter 2005, ch. 4),
  and a machine's pace that drifts over seconds, shared by a round's two processes, leaves
  the ratio. Processes are the independent units, so the interval holds
  process-to-process variation and, inside each location, however correlated the steps
  were; it is provisional below :data:`MIN_PROCESSES` per side.
- :func:`prediction_interval` -> :class:`PredictionInterval`: where one more process's
  location falls, from process-to-process variation (the compliance checks' noise model).
- :func:`slope_ci` -> :class:`SlopeCI`: a least-squares slope with a t interval that
  allows for autocorrelated residuals (the soak check's drift and growth).
- :func:`t_quantile`, :func:`t_sf`: Student's t for any real degrees of freedom > 0.
- :func:`should_stop` -> :class:`StopDecision`: adaptive stopping on precision (never on a
  provisional interval), budget or a repeat cap.
- :func:`interleaved_order`: ABBA run order, so that linear drift cancels.
- :func:`process_steps` -> :class:`ProcessSize`: the steps of a timing process after a
  side's quality run (Cochran's optimum subsample size, at least :data:`MIN_STEADY`).

Why a t interval on process locations and not a bootstrap: with 2-6 processes per side (what
a 30 s budget reaches) a bootstrap over processes has almost nothing to resample, and one
over steps treats correlated steps as independent; both covered the true ratio 72-83% of the
time where 95% was claimed. ``benchmarks/coverage.py`` compares the two.
"""

from __future__ import annotations

from parity.stats.processes import (
    EQUIVALENCE,
    MIN_PROCESSES,
    PAIRED_FROM,
    PredictionInterval,
    Processes,
    RatioCI,
    Sided,
    prediction_interval,
    ratio_ci,
)
from parity.stats.samples import SteadyState, Summary, detect_steady, summarize
from parity.stats.sizing import MIN_STEADY, PRIOR_SPREAD, ProcessSize, process_steps
from parity.stats.slope import SlopeCI, slope_ci
from parity.stats.stopping import StopDecision, fits, interleaved_order, should_stop
from parity.stats.tdist import t_quantile, t_sf

__all__ = [
    "EQUIVALENCE",
    "MIN_PROCESSES",
    "MIN_STEADY",
    "PAIRED_FROM",
    "PRIOR_SPREAD",
    "PredictionInterval",
    "ProcessSize",
    "Processes",
    "RatioCI",
    "Sided",
    "SlopeCI",
    "SteadyState",
    "StopDecision",
    "Summary",
    "detect_steady",
    "fits",
    "interleaved_order",
    "prediction_interval",
    "process_steps",
    "ratio_ci",
    "should_stop",
    "slope_ci",
    "summarize",
    "t_quantile",
    "t_sf",
]
