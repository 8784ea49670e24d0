"""How fast bad input is refused, against how long ``import torch`` takes.

Each command runs as a fresh process, in rounds that interleave them (so drift in the
machine's load hits all alike); the figure is each command's median wall time over the
rounds, divided by the median of ``python -c "import torch"``. The goal (issue 13): every
rejection in under a third of the torch import, so a typo costs no more than a blink.

    .venv/bin/python benchmarks/reject_fast.py            # 9 rounds (~40 s)
    .venv/bin/python benchmarks/reject_fast.py --quick    # 3 rounds

Each rejection must also be what the README promises (exit code 2, one line on stderr);
a command that is not is reported and fails the result. Nothing here imports torch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1 / 3


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def parity_command() -> list[str]:
    """The installed ``parity`` entry point beside this Python, else ``python -m parity``."""
    script = Path(sys.executable).with_name("parity")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "parity"]


def commands() -> dict[str, list[str]]:
    parity = parity_command()
    return {
        "python -c 'import torch'": [sys.executable, "-c", "import torch"],
        "parity compare --target bogus": [*parity, "compare", "--target", "bogus"],
        "parity compare nope": [*parity, "compare", "nope"],
        "parity run --device cpu+nproc=0 ...": [
            *parity,
            *("run", "mlp-train", "--device", "cpu+nproc=0", "--out", "bundle"),
        ],
    }


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, done.returncode, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    print(f"start: {load_line()}")
    work = Path(tempfile.mkdtemp(prefix="parity-reject-"))
    env = {
        **os.environ,
        "PARITY_CACHE_DIR": str(work / "cache"),
        "PARITY_STORE": str(work / "store" / "index.sqlite"),
    }
    cmds = commands()
    times: dict[str, list[float]] = {name: [] for name in cmds}
    problems: set[str] = set()
    for argv in cmds.values():  # one warm-up each: page cache, .pyc files
        timed(argv, work, env)
    for r in range(rounds):
        order = list(cmds) if r % 2 == 0 else list(reversed(cmds))
        for name in order:
            seconds, code, stderr = timed(cmds[name], work, env)
            times[name].append(seconds)
            lines = stderr.strip().splitlines()
            if name.startswith("parity") and (code != 2 or len(lines) != 1):
                problems.add(f"{name}: exit {code}, {len(lines)} stderr line(s)")
    leftover = sorted(p.name for p in work.iterdir())
    shutil.rmtree(work, ignore_errors=True)
    torch_s = statistics.median(times["python -c 'import torch'"])
    print(f"{'command':40} {'median':>9} {'min':>9} {'max':>9} {'/ torch':>8}")
    worst = 0.0
    for name, samples in times.items():
        median = statistics.median(samples)
        ratio = median / torch_s
        if name.startswith("parity"):
            worst = max(worst, ratio)
        print(f"{name:40} {median:8.3f}s {min(samples):8.3f}s {max(samples):8.3f}s {ratio:8.3f}")
    print(f"rounds: {rounds}; files left in the working directory: {leftover or 'none'}")
    for problem in sorted(problems):
        print(f"NOT A CLEAN REJECTION: {problem}")
    print(f"end: {load_line()}")
    ok = worst < TARGET and not problems and not leftover
    print(f"RESULT: reject_fast {worst:.3f} (target < {TARGET:.3f}) {'PASS' if ok else 'FAIL'}")


if __name__ == "__main__":
    main()
