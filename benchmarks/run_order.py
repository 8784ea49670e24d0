"""A comparison's processes in the order they ran, and whether the machine's pace changed.

For each comparison directory: every measured process's steady median in run order
(``b`` baseline, ``t`` target, in ms), each side's spread (the standard deviation of its
log process medians), the ratio's 95% interval both ways (paired round by round, as the
judge computes it for one comparison's rounds from ``stats.PAIRED_FROM`` of them, and
over independent sides, Welch's), and what :func:`parity.stats.pace.any_change` finds (a
change of pace both sides shared, else the ratio moving: one side's processes shifted
alone; the check "machine pace held while measuring" of the speed section judges the
same), and where the host placed the threads two ways, each placement's ratio
(``steadiness.handoff``, from the processes' thread handoff figures). It reads the bundles as
they are, so a comparison made before these checks can be looked at again.

    .venv/bin/python benchmarks/run_order.py DIR [DIR ...]
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from parity.comparison import Comparison
from parity.errors import BundleError
from parity.judge import speed, steadiness
from parity.judge.steadiness import handoff, handoffs, placements_finding
from parity.report import words
from parity.stats import ratio_ci
from parity.stats.pace import any_change


def run_order(out: Path) -> list[tuple[str, float]]:
    """``(role, steady median in seconds)`` of each measured process, in run order."""
    return steadiness.run_order(*Comparison.load(out).measured_sides())


def intervals(out: Path) -> str:
    """The ratio's interval paired over the rounds and over independent sides."""
    a, b = Comparison.load(out).measured_sides()
    base, target = speed.processes(a, "baseline"), speed.processes(b, "target")
    if base is None or target is None:
        return "no interval"
    said = []
    for paired in (True, False):
        ci = ratio_ci(base, target, paired=paired)
        how = "paired" if ci.rounds_spread is not None else "independent"
        said.append(f"{how} {ci.ratio:.3f} [{ci.low:.3f}, {ci.high:.3f}] ±{ci.half_width_rel:.1%}")
    return "; ".join(dict.fromkeys(said))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="comparison directories")
    args = parser.parse_args()
    for out in args.dirs:
        try:
            order = run_order(out)
        except BundleError as exc:
            print(f"{out}: {exc}")
            continue
        if not order:
            print(f"{out}: no measured processes with a run order")
            continue
        spread = {
            role: statistics.stdev([math.log(m) for r, m in order if r == role])
            for role in ("baseline", "target")
            if sum(1 for r, _ in order if r == role) > 1
        }
        print(
            f"{out}: {len(order)} processes, spread "
            + ", ".join(f"{role} {s:.3f}" for role, s in spread.items())
        )
        print("  " + " ".join(f"{role[0]}{m * 1e3:.2f}" for role, m in order))
        print(f"  interval: {intervals(out)}")
        change = any_change(order)
        if change is None:
            print("  the pace and the ratio held")
        else:
            what = "the pace" if change.shared else "the ratio"
            print(
                f"  {what} changed at process {change.at} of the order: baseline "
                f"{change.baseline_shift:.2f}x, target {change.target_shift:.2f}x; ratio "
                f"{change.ratio_before:.3f} before, {change.ratio_after:.3f} after"
            )
        a, b = Comparison.load(out).measured_sides()
        placements = handoff(a, b, [*handoffs(a, "baseline"), *handoffs(b, "target")])
        said = words.says(placements_finding(placements)) if placements else None
        print(f"  {said}" if said else "  one placement of the threads")


if __name__ == "__main__":
    main()
