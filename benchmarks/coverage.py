"""Coverage of the speed ratio's 95% interval: the old hierarchical bootstrap against the
Welch t interval over processes (``parity.stats.ratio_ci``), on simulated comparisons.

Each draw is a comparison with a known ratio (log-uniform in 0.5-2): every process has its
own speed ``exp(spread * Z)``, its steps carry 5% AR(1) noise with correlation ``phi``, and
it runs 20, 50, 100 or 200 steady steps (cycled over the draws). For each setting
(processes per side, phi, spread) the table gives how often each method's interval holds
the true ratio, and its median half-width. The bootstrap is the one parity used before
(two levels: processes, then steps within each chosen process; percentile interval over
the ratio of pooled medians), kept here only for this comparison.

A third table is for sized timing processes (issue 28): each side's first process is its
quality run (``--quality-steps``, default 30 steady steps: the frozen workload's), the
others are timing processes of 10 or 15 steady steps (what ``stats.process_steps`` gives
a side whose steps are slow or noisy); the Welch t interval over them, as above.

A second table runs the adaptive protocol (phi 0.5): rounds of one process per side until
precision or the round cap (what the default budget allows) is reached. The old rule stops
on the bootstrap interval from 2 rounds on; the new one on ``should_stop`` (never on a
provisional interval, so not before 3 per side). It gives the coverage of the final
interval over all draws, how many stopped on precision, their coverage, and the mean
number of rounds.

    python benchmarks/coverage.py [--quick] [--draws N] [--old-draws N] [--resamples N]
                                  [--quality-steps N]

``--old-draws 0`` skips the bootstrap (most of the run's time).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _common import load_line, table

from parity.stats import Processes, ratio_ci, should_stop

STEP_NOISE = 0.05
STEPS = (10, 15, 20, 50, 100, 200)
#: steady steps of a sized timing process (``stats.process_steps``'s floor and a bit more)
TIMING_STEPS = (10, 15)
TARGET = 0.93
ADAPTIVE_CAP = 6  # rounds: what the default 30 s budget reaches at most (issue 16)
OLD_ADAPTIVE_RESAMPLES = 500


def _steps(rng: np.random.Generator, m: int, n: int, phi: float, spread: float) -> np.ndarray:
    """``(m, n)`` step times around 1: a speed per process, AR(1) noise along the steps."""
    noise = np.empty((m, n))
    noise[:, 0] = rng.standard_normal(m) * STEP_NOISE
    innovations = rng.standard_normal((m, n)) * STEP_NOISE * math.sqrt(1 - phi * phi)
    for j in range(1, n):
        noise[:, j] = phi * noise[:, j - 1] + innovations[:, j]
    return np.exp(spread * rng.standard_normal((m, 1)) + noise)


def _boot_medians(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The old estimator's bootstrap medians of one side (``(m, n)``, equal lengths)."""
    m, n = x.shape
    chosen = rng.integers(0, m, size=(resamples, m))
    within = rng.integers(0, n, size=(resamples, m, n))
    return np.asarray(np.median(x[chosen[:, :, None], within].reshape(resamples, -1), axis=1))


def _bootstrap(
    a: np.ndarray, b: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    boot = _boot_medians(b, resamples, rng) / _boot_medians(a, resamples, rng)
    low, high = np.quantile(boot, [0.025, 0.975])
    return float(low), float(high)


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    ci = ratio_ci(Processes.from_steps(list(a)), Processes.from_steps(list(b)))
    return ci.low, ci.high, ci.half_width_rel


def fixed(
    m: int, phi: float, spread: float, draws: int, old_draws: int, resamples: int
) -> list[object]:
    rng = np.random.default_rng([m, int(phi * 10), int(spread * 1000)])
    new_hits, old_hits, new_half, old_half = [], [], [], []
    for k in range(draws):
        truth = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
        n = STEPS[k % len(STEPS)]
        a, b = _steps(rng, m, n, phi, spread), truth * _steps(rng, m, n, phi, spread)
        low, high, half = _welch(a, b)
        new_hits.append(low <= truth <= high)
        new_half.append(half)
        if k < old_draws:
            low, high = _bootstrap(a, b, resamples, rng)
            old_hits.append(low <= truth <= high)
            ratio = float(np.median(b) / np.median(a))
            old_half.append((high - low) / 2 / ratio)
    return [
        m,
        phi,
        f"{spread:.0%}",
        f"{np.mean(old_hits):.3f}" if old_hits else "-",
        f"{np.mean(new_hits):.3f}",
        f"{np.median(old_half):.1%}" if old_half else "-",
        f"{np.median(new_half):.1%}",
    ]


def sized(m: int, phi: float, spread: float, draws: int, quality_steps: int) -> list[object]:
    """Coverage with a long first process (the quality run) and short timing processes."""
    rng = np.random.default_rng([7, m, int(phi * 10), int(spread * 1000)])
    hits, halves = [], []
    for k in range(draws):
        truth = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
        n = TIMING_STEPS[k % len(TIMING_STEPS)]
        sides = []
        for scale in (1.0, truth):
            first = _steps(rng, 1, quality_steps, phi, spread)[0]
            rest = _steps(rng, m - 1, n, phi, spread)
            sides.append([scale * first, *(scale * rest)])
        ci = ratio_ci(Processes.from_steps(sides[0]), Processes.from_steps(sides[1]))
        hits.append(ci.low <= truth <= ci.high)
        halves.append(ci.half_width_rel)
    return [
        m,
        phi,
        f"{spread:.0%}",
        quality_steps,
        f"{np.mean(hits):.3f}",
        f"{np.median(halves):.1%}",
    ]


def _run_adaptive(
    a: np.ndarray, b: np.ndarray, precision: float, old: bool, rng: np.random.Generator
) -> tuple[float, float, int, bool]:
    """Rounds from 2 until the stop rule: the new one (``should_stop``: precision only on
    an interval that is not provisional) or the old one (precision from 2 rounds on, on
    the bootstrap interval). Returns the final interval, the rounds and whether precision
    ended it."""
    cap = a.shape[0]
    for r in range(2, cap + 1):
        if old:
            low, high = _bootstrap(a[:r], b[:r], OLD_ADAPTIVE_RESAMPLES, rng)
            ratio = float(np.median(b[:r]) / np.median(a[:r]))
            if (high - low) / 2 / ratio <= precision:
                return low, high, r, True
            continue
        ci = ratio_ci(Processes.from_steps(list(a[:r])), Processes.from_steps(list(b[:r])))
        low, high = ci.low, ci.high
        stop = should_stop(
            ci, precision=precision, elapsed_s=r, budget_s=1e9, repeats=r, max_repeats=cap
        )
        if stop is not None:
            return low, high, r, stop.reason == "precision"
    return low, high, cap, False


def adaptive(
    phi: float, spread: float, precision: float, cap: int, draws: int, old_draws: int
) -> list[object]:
    rng = np.random.default_rng([99, int(phi * 10), int(spread * 1000), int(precision * 1000)])
    out: list[object] = [phi, f"{spread:.1%}", f"±{precision:.0%}", cap]
    for old, count in ((True, old_draws), (False, draws)):
        if count == 0:
            out += ["-"] * 4
            continue
        hits, stopped_hits, rounds = [], [], []
        for k in range(count):
            truth = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
            n = STEPS[k % len(STEPS)]
            a = _steps(rng, cap, n, phi, spread)
            b = truth * _steps(rng, cap, n, phi, spread)
            low, high, r, on_precision = _run_adaptive(a, b, precision, old, rng)
            hits.append(low <= truth <= high)
            rounds.append(r)
            if on_precision:
                stopped_hits.append(hits[-1])
        out += [
            f"{np.mean(hits):.3f}",
            f"{len(stopped_hits) / count:.0%}",
            f"{np.mean(stopped_hits):.3f}" if stopped_hits else "-",
            f"{np.mean(rounds):.1f}",
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--draws", type=int, help="draws per setting (default 1000, quick 100)")
    parser.add_argument(
        "--old-draws", type=int, help="of those, bootstrapped too (default 400, quick 50)"
    )
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument(
        "--quality-steps", type=int, default=30, help="steady steps of a side's quality run"
    )
    args = parser.parse_args()
    draws = args.draws or (100 if args.quick else 1000)
    given = args.old_draws if args.old_draws is not None else (50 if args.quick else 400)
    old_draws = min(draws, given)
    print(f"coverage: {time.strftime('%Y-%m-%d %H:%M:%S')}, {load_line()}")
    print(
        f"{draws} draws per setting ({old_draws} also bootstrapped, {args.resamples} "
        f"resamples); steps {STEPS} cycled; step noise {STEP_NOISE:.0%}"
    )
    rows = [
        fixed(m, phi, spread, draws, old_draws, args.resamples)
        for m in (2, 3, 4, 6)
        for phi in (0.0, 0.5, 0.8)
        for spread in (0.0, 0.02, 0.05)
    ]
    headers = ["per side", "phi", "spread", "old cover", "new cover", "old ±", "new ±"]
    print(table(headers, rows))
    print()
    print(f"sized: the quality run, then timing processes of {TIMING_STEPS} steady steps")
    rows_sized = [
        sized(m, phi, spread, draws, args.quality_steps)
        for m in (3, 4, 6)
        for phi in (0.0, 0.5, 0.8)
        for spread in (0.0, 0.02, 0.05)
    ]
    headers_sized = ["per side", "phi", "spread", "quality steps", "cover", "±"]
    print(table(headers_sized, rows_sized))
    print()
    print("adaptive: rounds of one process per side from 2 until precision or the cap")
    rows_ad = [
        adaptive(0.5, spread, precision, ADAPTIVE_CAP, draws, old_draws)
        for spread in (0.005, 0.02, 0.05)
        for precision in (0.02, 0.05)
    ]
    headers = ["phi", "spread", "asked", "cap"]
    for who in ("old", "new"):
        headers += [f"{who} cover", f"{who} on ±", f"{who} their cover", f"{who} rounds"]
    print(table(headers, rows_ad))
    print(f"load at the end: {load_line()}")
    worst = min(
        *(float(str(r[4])) for r in rows),
        *(float(str(r[4])) for r in rows_sized),
    )
    verdict = "PASS" if worst >= TARGET else "FAIL"
    print(f"RESULT: coverage {worst:.3f} (target >= {TARGET}) {verdict}")


if __name__ == "__main__":
    main()
