"""A process's step times: their summary with its own noise judgement, and where warm-up
ends (MSER-5)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

NOISY_IQR_REL = 0.10
GROSS_IQR_REL = 0.25
MSER_BATCH = 5
Noise = Literal["ok", "noisy", "gross"]


def _as_array(samples: Sequence[float], what: str) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError(f"{what} is empty: measure at least one step before summarising it.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} holds a NaN or infinite time: check the timer and the step.")
    return x


@dataclass(frozen=True, kw_only=True, slots=True)
class Summary:
    """A sample of step times in seconds, with its spread and its own noise judgement."""

    n: int
    median: float
    iqr: float
    mean: float
    stdev: float
    min: float
    max: float
    p10: float
    p90: float
    #: IQR as a fraction of the median (a large finite figure when the median is not
    #: positive), and the judgement: ok (<= 10%), noisy (> 10%) or gross (> 25%)
    iqr_rel: float = field(init=False)
    noise: Noise = field(init=False)

    def __post_init__(self) -> None:
        unbounded = 0.0 if self.iqr == 0 else 1e300
        rel = self.iqr / self.median if self.median > 0 else unbounded
        noise: Noise = "gross" if rel > GROSS_IQR_REL else "noisy" if rel > NOISY_IQR_REL else "ok"
        object.__setattr__(self, "iqr_rel", rel)
        object.__setattr__(self, "noise", noise)

    def warnings(self) -> list[str]:
        """Sentences that say what is wrong with this sample and how to fix it."""
        out: list[str] = []
        pct = f"{self.iqr_rel:.0%}" if self.iqr_rel < 1e300 else "unbounded"
        if self.noise == "gross":
            out.append(
                f"IQR is {pct} of the median (> {GROSS_IQR_REL:.0%}): gross interference "
                "(another process, throttling or clock changes); rerun on an idle machine "
                "before trusting this figure"
            )
        elif self.noise == "noisy":
            out.append(
                f"IQR is {pct} of the median (> {NOISY_IQR_REL:.0%}): the machine was noisy; "
                "rerun on an idle machine or add repeats"
            )
        if self.n < 5:
            out.append(
                f"only {self.n} sample(s): the median and IQR are unreliable; "
                "measure at least 5 steady steps"
            )
        return out


def summarize(samples: Sequence[float]) -> Summary:
    """Summarise step times (seconds); percentiles interpolate linearly (numpy default)."""
    x = _as_array(samples, "the sample")
    p10, p25, p50, p75, p90 = np.percentile(x, [10, 25, 50, 75, 90])
    return Summary(
        n=int(x.size),
        median=float(p50),
        iqr=float(p75 - p25),
        mean=float(x.mean()),
        stdev=float(x.std(ddof=1)) if x.size > 1 else 0.0,
        min=float(x.min()),
        max=float(x.max()),
        p10=float(p10),
        p90=float(p90),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class SteadyState:
    """Where the steady state starts: ``samples[start:]`` are steady."""

    start: int
    capped: bool
    method: str
    #: a sentence when the steady state was not reached within the cap, else None
    message: str | None = field(init=False)

    def __post_init__(self) -> None:
        message = (
            f"steady state not reached within the cap (truncated at sample {self.start}): "
            "the step time was still trending; run more warm-up steps or longer repeats"
            if self.capped
            else None
        )
        object.__setattr__(self, "message", message)


def _mser_argmin(y: np.ndarray, dmax: int) -> int:
    """MSER: the ``d`` in ``[0, dmax]`` minimising ``sum((y[d:] - mean)^2) / (n - d)^2``."""
    n = y.size
    y = y - np.median(y)  # centre for numerically safe running sums
    s1 = np.cumsum(y[::-1])[::-1][: dmax + 1]
    s2 = np.cumsum((y * y)[::-1])[::-1][: dmax + 1]
    m = n - np.arange(dmax + 1, dtype=np.float64)
    stat = np.maximum(s2 - s1 * s1 / m, 0.0) / (m * m)
    return int(np.argmin(stat))  # first minimum: the shortest truncation among ties


def detect_steady(
    samples: Sequence[float], *, cap_fraction: float = 0.5, min_steady: int = 5
) -> SteadyState:
    """Find the first steady sample by MSER-5, never truncating more than ``cap_fraction``.

    MSER picks the truncation point ``d`` that minimises the squared standard error of the
    mean of what remains, ``sum((x[d:] - mean)^2) / (n - d)^2``: cutting warm-up shrinks the
    spread faster than it shrinks the sample. With at least ``2 * min_steady`` batches the
    statistic runs on batch means of 5 (MSER-5, smoother) and ``start`` is a multiple of 5;
    otherwise on raw values. ``d`` is searched over ``[0, cap]`` with ``cap`` the smaller
    of ``cap_fraction * n`` and ``n - min_steady``; a minimum at the cap means the series
    was still trending there, reported as ``capped=True``.

    Tiny samples (``n < 2 * min_steady``) are too short for MSER: ``start`` is 1 when the
    first sample is the slowest of at least 3 (a first step that paid for first use),
    else 0.
    """
    if not 0 <= cap_fraction < 1:
        raise ValueError(f"cap_fraction must be in [0, 1) (got {cap_fraction}).")
    if min_steady < 1:
        raise ValueError(f"min_steady must be at least 1 (got {min_steady}).")
    x = _as_array(samples, "the sample")
    n = int(x.size)
    if n < 2 * min_steady:
        drop_first = n >= 3 and x[0] > x[1:].max()
        return SteadyState(start=int(drop_first), capped=False, method="tiny:first-slowest")
    if n // MSER_BATCH >= 2 * min_steady:
        nb = n // MSER_BATCH
        y = x[: nb * MSER_BATCH].reshape(nb, MSER_BATCH).mean(axis=1)
        unit, method = MSER_BATCH, f"MSER-{MSER_BATCH}"
    else:
        y, unit, method = x, 1, "MSER"
    cap_samples = min(math.floor(cap_fraction * n), n - min_steady)
    dmax = cap_samples // unit
    d = _mser_argmin(y, dmax)
    return SteadyState(start=d * unit, capped=dmax > 0 and d == dmax, method=method)
