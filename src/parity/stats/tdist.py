"""Student's t distribution for any real degrees of freedom > 0 (no scipy)."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (DLMF 8.17.22),
    by the modified Lentz method; converges fast for ``x < (a + 1) / (a + b + 2)``."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for num in (even, odd):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def beta_inc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        a * math.log(x)
        + b * math.log1p(-x)
        - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df > 0`` degrees of freedom (real, not only
    whole: Welch's degrees of freedom are fractional)."""
    if not df > 0:
        raise ValueError(f"degrees of freedom must be greater than 0 (got {df}).")
    tail = 0.5 * beta_inc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def _t_log_pdf(t: float, df: float) -> float:
    return (
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df > 0`` degrees of freedom.

    Closed forms for 1 and 2 degrees of freedom; otherwise Newton's method on ``log t``
    against :func:`t_sf`, started from the Cornish-Fisher expansion around the normal;
    the tail probability of the result is within 1e-8 (relative) of ``1 - p``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1) (got {p}).")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be greater than 0 (got {df}).")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df == 1.0:
        return math.tan(math.pi * (p - 0.5))
    if df == 2.0:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = NormalDist().inv_cdf(p)
    t = max(z, z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df))
    log_q = math.log1p(-p)
    for _ in range(100):
        sf = t_sf(t, df)
        step = (math.log(sf) - log_q) * sf / (math.exp(_t_log_pdf(t, df)) * t)
        step = min(max(step, -1.0), 1.0)
        t *= math.exp(step)
        if abs(step) < 1e-12:
            break
    return t


# -- one side's processes ----------------------------------------------------------------
