"""A one-sided Clopper-Pearson bound on a proportion (no scipy)."""

from __future__ import annotations

from parity.stats.tdist import beta_inc


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
