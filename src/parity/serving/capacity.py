"""A side's highest request rate within every latency limit: bracket, then bisect.

From a start rate, double while steps pass (halve while they do not, until one passes),
then bisect geometrically between the highest passing rate and the lowest rate that did
not pass, until they are within ``precision`` of each other or the step budget is spent.
A step passes only where every limit's upper bound is within it (``metrics.decide``); a
failed or unproven step bounds the search from above. A client-bound step ends the search:
past the client's ceiling nothing more can be said of the server.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from parity.model.serving import Capacity, StepFigures

#: steps one search may run
MAX_STEPS = 10
#: the search stops once the highest pass and the lowest non-pass are this close
PRECISION = 0.05


def search(
    measure: Callable[[float], StepFigures],
    start: float,
    *,
    max_steps: int = MAX_STEPS,
    precision: float = PRECISION,
) -> Capacity:
    """Run steps through ``measure(rate)`` and return the highest passing rate."""
    passed: float | None = None
    above: float | None = None
    labels: list[str] = []
    rate = start
    stopped = "budget"
    while len(labels) < max_steps:
        step = measure(rate)
        labels.append(step.label)
        if step.decision == "client-bound":
            above, stopped = rate if above is None else min(above, rate), "client-bound"
            break
        if step.decision == "pass":
            passed = rate if passed is None else max(passed, rate)
        else:
            above = rate if above is None else min(above, rate)
        if passed is not None and above is not None:
            if above / passed <= 1 + precision:
                stopped = "converged"
                break
            rate = math.sqrt(passed * above)
        elif passed is not None:
            rate = passed * 2
        else:
            rate = rate / 2
            if rate < start / 2**6:
                stopped = "none-passed"
                break
    return Capacity(rate=passed, failed_above=above, steps=tuple(labels), stopped=stopped)
