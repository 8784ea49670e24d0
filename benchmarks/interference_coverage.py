"""Coverage of the speed interval on a known ratio, on the machine as it is and with a
competing two-thread job: does the 95% interval hold the truth, and where it does not,
does the verdict say why (the speed unreliable, or a finding on the sides' load)?

Workload ``benchmarks/workloads/paced.py:Paced`` (the tiny MLP, each step paced by a
sleep to 50 ms on the baseline and 1.20 times that on the target, one thread a side), so
the truth is 1.20 on a quiet machine. Each row is one ``parity compare`` with
``--repeats 3`` (three processes a side, interleaved). ``--job 2`` runs a two-thread
torch matmul loop (its own process group, killed by it) through every comparison of
that condition. Per condition: intervals that hold 1.20, the ones that miss it, and of
those how many the verdict marked (not reliable, or the load check's finding); beside
them, how many of the plain intervals (before the steadiness widened them) held 1.20,
and how many the processes' waits widened (``speed.waited``: a wait both sides paid,
taken off, moves the ratio away from 1).

    .venv/bin/python benchmarks/interference_coverage.py [--runs N] [--job 0 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import load_line, table

HERE = Path(__file__).parent
WORKLOAD = f"{HERE / 'workloads' / 'paced.py'}:Paced"
TRUTH = 1.20
PARITY = str(Path(sys.executable).with_name("parity"))
JOB = "import torch\ntorch.set_num_threads({n})\na = torch.randn(512, 512)\nwhile True:\n    a @ a"


def command(out: Path) -> list[str]:
    sides = ["--baseline", "cpu+threads=1", "--target", "cpu+threads=1+deterministic"]
    return [PARITY, "compare", WORKLOAD, *sides, "--repeats", "3", "--out", str(out)]


def one(out: Path, cache: Path) -> dict[str, object]:
    env = {**os.environ, "PARITY_CACHE_DIR": str(cache)}
    subprocess.run(command(out), env=env, capture_output=True, check=False)
    speed = json.loads((out / "verdict.json").read_text()).get("speed") or {}
    iv = speed.get("interval") or {}
    steadiness = speed.get("steadiness") or {}
    checks = [*(speed.get("compliance") or ()), *(steadiness.get("checks") or ())]
    names = [c.get("name", "") for c in checks]
    waited = [f for f in steadiness.get("findings") or () if f.get("code") == "speed.waited"]
    plain = (waited[0].get("figures") or {}).get("plain") if waited else None
    low, high = (plain[1], plain[2]) if plain else (iv.get("low"), iv.get("high"))
    return {
        "ratio": speed.get("ratio"),
        "low": iv.get("low"),
        "high": iv.get("high"),
        "reliable": speed.get("reliable"),
        "load finding": any("load" in n for n in names),
        "plain held": low is not None and high is not None and low <= TRUTH <= high,
        "widened": bool(waited and (waited[0].get("figures") or {}).get("widened")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--job", type=int, nargs="+", default=[0, 2])
    args = parser.parse_args()
    print(load_line())
    rows = []
    with tempfile.TemporaryDirectory(prefix="parity-coverage-") as tmp:
        for threads in args.job:
            job = None
            if threads:
                code = JOB.format(n=threads)
                job = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
            try:
                got = []
                for k in range(args.runs):
                    r = one(Path(tmp) / f"out-{threads}-{k}", Path(tmp) / "cache")
                    got.append(r)
                    print(f"job {threads}: {r} ({load_line()})", flush=True)
            finally:
                if job is not None:
                    os.killpg(job.pid, signal.SIGTERM)
                    job.wait()
            have = [r for r in got if r["low"] is not None]
            held = [r for r in have if r["low"] <= TRUTH <= r["high"]]  # type: ignore[operator]
            missed = [r for r in have if r not in held]
            marked = [r for r in missed if r["reliable"] is False or r["load finding"]]
            findings = sum(1 for r in have if r["load finding"])
            plain = sum(1 for r in have if r["plain held"])
            wide = sum(1 for r in have if r["widened"])
            rows.append(
                (f"{threads}-thread job" if threads else "none", len(have), len(held),
                 len(missed), len(marked), findings, plain, wide)
            )  # fmt: skip
    heads = [
        "competing", "intervals", "hold 1.20", "miss", "miss marked", "load finding",
        "plain holds", "widened (waits)",
    ]  # fmt: skip
    print(table(heads, rows))
    print("command: " + " ".join(command(Path("OUT"))))
    print(load_line())


if __name__ == "__main__":
    main()
