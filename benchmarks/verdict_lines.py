"""How many lines the default verdict takes at 100 columns: the one-screen target.

Runs ``parity compare`` as a user would, with ``COLUMNS=100`` and stdout a pipe, and counts
the lines it prints on stdout (the verdict; progress goes to stderr):

- ``gpt-train --target cpu+bf16`` and ``mlp-train --target cpu+bf16`` (target: at most
  40 lines each);
- a planted fault: ``mlp-train`` (6 steps of 16) with 10% noise in one Linear from step
  3, on the ``parityfake+bf16`` test device (``tests/fixtures/faults.py``; it needs a C++ compiler
  and ninja), which fails quality (target: at most 45 lines, with the failing gate and the
  first diverging module on the screen).

Each screen is kept in ``--keep DIR`` (default: a temporary folder) as ``NAME.txt``, and
``--verbose`` counts the full view's lines beside it.

    .venv/bin/python benchmarks/verdict_lines.py [--only mlp,gpt,fault] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import load_line

ROOT = Path(__file__).resolve().parent.parent
PARITY = str(Path(sys.executable).with_name("parity"))
FAULTS = ROOT / "tests" / "fixtures" / "faults.py"

#: name: (arguments, extra environment, most lines allowed)
RUNS: dict[str, tuple[list[str], dict[str, str], int]] = {
    "gpt": (["gpt-train", "--target", "cpu+bf16"], {}, 40),
    "mlp": (["mlp-train", "--target", "cpu+bf16"], {}, 40),
    "fault": (
        [
            *(f"{FAULTS}:NoiseFromStepBf16", "--baseline", "cpu", "--target", "parityfake+bf16"),
            *("--steps", "6", "--batch-size", "16"),  # as tests/test_quality_verdict.py runs it
            *("--budget", "300"),  # a budget that keeps the per-module probes on a busy machine
        ],
        {"PARITY_PLUGINS": "parity.testing.fakedevice"},
        45,
    ),
}


def screen(name: str, keep: Path) -> tuple[int, int, float, int]:
    """(screen lines, full-view lines, seconds, exit code) of one comparison."""
    args, extra, _ = RUNS[name]
    out = keep / name
    env = {**os.environ, "COLUMNS": "100", **extra}
    start = time.monotonic()
    done = subprocess.run(
        [PARITY, "compare", *args, "--out", str(out), "--no-report"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - start
    if done.returncode not in (0, 1, 3):
        sys.exit(f"{name}: parity compare exited {done.returncode}:\n{done.stderr[-3000:]}")
    (keep / f"{name}.txt").write_text(done.stdout)
    full = subprocess.run(
        [PARITY, "explain", str(out)], env=env, capture_output=True, text=True, check=True
    )
    return len(done.stdout.splitlines()), len(full.stdout.splitlines()), took, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(RUNS), help="which runs: gpt,mlp,fault")
    parser.add_argument("--keep", type=Path, default=None, help="keep the outputs here")
    opts = parser.parse_args()
    keep = opts.keep or Path(tempfile.mkdtemp(prefix="verdict-lines-"))
    keep.mkdir(parents=True, exist_ok=True)
    print(f"{load_line()}; outputs in {keep}")
    print(f"{'comparison':<10} {'screen':>6} {'limit':>5} {'full':>5} {'exit':>4} {'took':>7}")
    for name in opts.only.split(","):
        lines, full, took, code = screen(name, keep)
        limit = RUNS[name][2]
        mark = "" if lines <= limit else "  over the limit"
        print(f"{name:<10} {lines:>6} {limit:>5} {full:>5} {code:>4} {took:>6.0f}s{mark}")
    print(load_line())


if __name__ == "__main__":
    main()
