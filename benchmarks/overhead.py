"""parity's timing-loop overhead: ``StepTimer.run`` against a bare ``perf_counter_ns`` loop.

The step is a ~1 ms single-thread float32 matmul (its size is calibrated first and its time
reported). Both loops time the same step, one sample per step; parity's also calls the
side's synchronize (a no-op on CPU). They run in alternating blocks, A B B A A B B A ..., so
that linear drift of the machine cancels from the ratios. Reported, parity/bare: the ratio
of the pooled median per-step times and of the summed wall times of the loops.

    python benchmarks/overhead.py [--quick] [--steps N] [--blocks B]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from time import perf_counter_ns

from _common import load_line, make_matmul_step, noop, table

from parity.probes.timing import StepTimer

TARGET_RATIO = 1.01


def bare_loop(step: Callable[[int], None], count: int) -> list[int]:
    """The loop anyone would write: read the clock around each step."""
    samples = []
    for i in range(count):
        t0 = perf_counter_ns()
        step(i)
        samples.append(perf_counter_ns() - t0)
    return samples


def empty_step_cost(count: int = 100_000) -> dict[str, float]:
    """Nanoseconds per step of each loop around a step that does nothing (best of 4, ABBA)."""

    def nothing(i: int) -> None:
        pass

    timer = StepTimer(nothing, noop)
    loops: dict[str, Callable[[], object]] = {
        "parity": lambda: timer.run(0, count),
        "bare": lambda: bare_loop(nothing, count),
    }
    best = dict.fromkeys(loops, float("inf"))
    for k in range(4):
        for name in ("parity", "bare") if k % 2 == 0 else ("bare", "parity"):
            t0 = perf_counter_ns()
            loops[name]()
            best[name] = min(best[name], (perf_counter_ns() - t0) / count)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--steps", type=int, help="steps per block (default 2000, quick 300)")
    parser.add_argument("--blocks", type=int, help="blocks per loop (default 4, quick 2)")
    args = parser.parse_args()
    steps = args.steps or (300 if args.quick else 2000)
    blocks = args.blocks or (2 if args.quick else 4)

    print(f"overhead: {time.strftime('%Y-%m-%d %H:%M:%S')}, {load_line()}")
    step, n, step_s = make_matmul_step()
    print(f"step: {n}x{n} float32 matmul, 1 thread, median {step_s * 1e3:.3f} ms")

    timer = StepTimer(step, noop)
    loops: dict[str, Callable[[int], list[int]]] = {
        "parity": lambda count: timer.run(0, count),
        "bare": lambda count: bare_loop(step, count),
    }
    for run in loops.values():  # warm caches, allocator and branch predictors for both
        run(min(steps, 200))

    samples: dict[str, list[int]] = {name: [] for name in loops}
    walls: dict[str, list[int]] = {name: [] for name in loops}
    rows: list[tuple[object, ...]] = []
    names = list(loops)
    for k in range(blocks):
        for name in names if k % 2 == 0 else names[::-1]:
            t0 = perf_counter_ns()
            got = loops[name](steps)
            wall = perf_counter_ns() - t0
            samples[name] += got
            walls[name].append(wall)
            rows.append(
                (
                    len(rows) + 1,
                    name,
                    f"{statistics.median(got) / 1e6:.4f}",
                    f"{wall / 1e9:.3f}",
                    f"{wall / steps / 1e6:.4f}",
                )
            )
    print(table(("block", "loop", "median step ms", "wall s", "wall/step ms"), rows))

    median = {name: statistics.median(s) for name, s in samples.items()}
    total = {name: sum(w) for name, w in walls.items()}
    median_ratio = median["parity"] / median["bare"]
    wall_ratio = total["parity"] / total["bare"]
    per_step_ns = (total["parity"] - total["bare"]) / (blocks * steps)
    print()
    print(
        table(
            ("figure", "parity", "bare", "parity/bare"),
            [
                (
                    "median step ms",
                    f"{median['parity'] / 1e6:.4f}",
                    f"{median['bare'] / 1e6:.4f}",
                    f"{median_ratio:.4f}",
                ),
                (
                    f"total wall s ({blocks}x{steps} steps)",
                    f"{total['parity'] / 1e9:.3f}",
                    f"{total['bare'] / 1e9:.3f}",
                    f"{wall_ratio:.4f}",
                ),
            ],
        )
    )
    print(f"wall-time difference per step: {per_step_ns:+.0f} ns")
    empty = empty_step_cost()
    print(
        "loop cost per step with an empty step (wall/steps, best of 4): "
        f"parity {empty['parity']:.0f} ns, bare {empty['bare']:.0f} ns, "
        f"difference {empty['parity'] - empty['bare']:+.0f} ns "
        f"({(empty['parity'] - empty['bare']) / median['bare']:+.4%} of the 1 ms step)"
    )
    print(f"after: {load_line()}")
    worst = max(median_ratio, wall_ratio)
    verdict = "PASS" if worst <= TARGET_RATIO else "FAIL"
    print(f"RESULT: overhead {worst:.4f} (target <= {TARGET_RATIO}) {verdict}")


if __name__ == "__main__":
    main()
