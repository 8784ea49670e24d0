"""A one-sided Clopper-Pearson bound on a proportion (no scipy), and the fewest trials
that can tell a proportion from chance with it."""

from __future__ import annotations

import math

from parity.stats.tdist import beta_inc


def required_rows(minimum: float, alpha: float = 0.05) -> int:
    """The fewest trials that can tell ``minimum`` from chance: ``n`` trials that all
    succeed put the one-sided Clopper-Pearson lower bound at ``alpha ** (1 / n)``, above
    ``minimum`` once ``n > ln(alpha) / ln(minimum)`` (299 for 99%, 59 for 95%)."""
    if minimum <= 0 or minimum >= 1:
        return 1  # nothing to tell from chance, or only "every trial" can meet it
    return math.floor(math.log(alpha) / math.log(minimum)) + 1


def upper_bound(successes: int, n: int, alpha: float = 0.05) -> float:
    """The one-sided ``1 - alpha`` upper Clopper-Pearson bound on a proportion seen as
    ``successes`` of ``n``: the ``p`` at which ``P(X <= successes) = alpha`` for
    ``X ~ Binomial(n, p)``, found by bisection on ``P(X <= k) = I_{1-p}(n - k, k + 1)``."""
    if n <= 0:
        raise ValueError(f"a proportion needs at least one trial (got n={n}).")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in 0..{n} (got {successes}).")
    if successes == n:
        return 1.0
    lo, hi = successes / n, 1.0
    for _ in range(80):  # the cdf falls as p grows
        mid = (lo + hi) / 2.0
        if beta_inc(n - successes, successes + 1, 1.0 - mid) > alpha:
            lo = mid
        else:
            hi = mid
    return hi
