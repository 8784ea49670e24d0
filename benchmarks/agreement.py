"""parity's steady-state step time against ``torch.utils.benchmark`` on the same ~1 ms step.

parity: ``StepTimer.run`` over N steps, then what the worker does with the samples: drop the
first (the first step is its own phase), find the steady start by MSER-5
(``stats.detect_steady``) and take the median of the rest (``stats.summarize``).
torch: ``Timer(...).blocked_autorange(min_run_time=...)``, whose median is over blocks of
several calls each. The two alternate (A B B A ...) over a few pairs; each pair's ratio
parity/torch is reported, and the median of those ratios is the figure.

    python benchmarks/agreement.py [--quick] [--pairs P] [--steps N] [--min-run-time S]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import load_line, make_matmul_step, noop, table
from torch.utils.benchmark import Timer

from parity.probes.timing import StepTimer
from parity.stats import detect_steady, summarize

TOLERANCE = 0.03


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--pairs", type=int, help="parity/torch pairs (default 10, quick 2)")
    parser.add_argument("--steps", type=int, help="parity steps per run (default 1000, quick 300)")
    parser.add_argument(
        "--min-run-time", type=float, help="torch min_run_time in s (default 1.0, quick 0.3)"
    )
    args = parser.parse_args()
    pairs = args.pairs or (2 if args.quick else 10)
    steps = args.steps or (300 if args.quick else 1000)
    min_run_time = args.min_run_time or (0.3 if args.quick else 1.0)

    print(f"agreement: {time.strftime('%Y-%m-%d %H:%M:%S')}, {load_line()}")
    step, n, step_s = make_matmul_step()
    print(f"step: {n}x{n} float32 matmul, 1 thread, median {step_s * 1e3:.3f} ms")

    stepper = StepTimer(step, noop)
    # num_threads=1 is torch's default too; said here so both sides run the same step
    timer = Timer(stmt="step(0)", globals={"step": step}, num_threads=1)

    def parity_median() -> tuple[float, str]:
        seconds = [s * 1e-9 for s in stepper.run(0, steps)][1:]
        steady = detect_steady(seconds)
        summary = summarize(seconds[steady.start :])
        return summary.median, f"from {1 + steady.start}, {summary.n} steady, {steady.method}"

    def torch_median() -> tuple[float, str]:
        m = timer.blocked_autorange(min_run_time=min_run_time)
        return m.median, f"{len(m.times)} blocks x {m.number_per_run}"

    parity_median()  # warm both before anything counts
    timer.blocked_autorange(min_run_time=min(min_run_time, 0.2))

    rows = []
    ratios = []
    for k in range(pairs):
        got: dict[str, tuple[float, str]] = {}
        order = ("parity", "torch") if k % 2 == 0 else ("torch", "parity")
        for name in order:
            got[name] = parity_median() if name == "parity" else torch_median()
        ratio = got["parity"][0] / got["torch"][0]
        ratios.append(ratio)
        rows.append(
            (
                k + 1,
                "-".join(order),
                f"{got['parity'][0] * 1e3:.4f}",
                f"{got['torch'][0] * 1e3:.4f}",
                f"{ratio:.4f}",
                got["parity"][1],
                got["torch"][1],
            )
        )
    print(
        table(
            ("pair", "order", "parity ms", "torch ms", "ratio", "parity samples", "torch blocks"),
            rows,
        )
    )
    median_ratio = statistics.median(ratios)
    print(
        f"median ratio parity/torch {median_ratio:.4f} "
        f"(range {min(ratios):.4f} .. {max(ratios):.4f}); after: {load_line()}"
    )
    verdict = "PASS" if abs(median_ratio - 1) <= TOLERANCE else "FAIL"
    print(f"RESULT: agreement {median_ratio:.4f} (target |ratio-1| <= {TOLERANCE}) {verdict}")


if __name__ == "__main__":
    main()
