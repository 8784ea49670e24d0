"""The pre-run estimate against what the comparison then took, on every built-in, on the
machine as it is and under a competing load.

Each row is one ``parity compare BUILTIN --baseline cpu --target cpu+bf16`` at parity's
defaults, with an empty cache (``PARITY_CACHE_DIR`` a fresh folder: the fp64 reference
and the expected-error run are made, as on a first comparison). The estimate is the plan's
``expected_s`` (what the first line says, to the second: ``side.json``'s
``stop.estimate``, its phases and the rounds the budget leaves room for); the actual is
the wall time from that line on the command's stderr to the command's exit (what the user
waits for after reading it). The fp64 reference's own estimate and time are beside it.
``--load N`` runs N busy loops (``python -c 'while True: pass'``, in their own process
group, killed by it) while the row runs; the load average is printed with each row,
before it and after it.

Figure: the largest factor between estimate and actual, either way (target: 2).

    .venv/bin/python benchmarks/estimate_vs_actual.py [--workloads a,b] [--load N ...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import load_line, table

BUILTINS = ("mlp-train", "gpt-train", "gpt-generate", "cnn-infer")
PARITY = str(Path(sys.executable).with_name("parity"))
BUSY = "while True: pass"
WITHIN = 2.0


@dataclass
class Row:
    workload: str
    load: int
    before: float
    after: float
    estimate_s: float
    actual_s: float
    reference_est_s: float | None
    reference_s: float | None
    exit_code: int

    @property
    def factor(self) -> float:
        return max(self.estimate_s / self.actual_s, self.actual_s / self.estimate_s)


def command(workload: str, out: Path) -> list[str]:
    sides = ["--baseline", "cpu", "--target", "cpu+bf16"]
    return [PARITY, "compare", workload, *sides, "--out", str(out)]


def busy_loops(n: int) -> subprocess.Popen[bytes] | None:
    """``n`` busy loops in one new process group (a shell that starts them), or None."""
    if n <= 0:
        return None
    loops = " ".join(f"{sys.executable} -c '{BUSY}' &" for _ in range(n))
    return subprocess.Popen(["bash", "-c", f"{loops} wait"], start_new_session=True)


def stop(group: subprocess.Popen[bytes] | None) -> None:
    if group is not None:
        os.killpg(group.pid, signal.SIGTERM)
        group.wait()


def one(workload: str, load: int, work: Path) -> Row:
    env = {**os.environ, "PARITY_CACHE_DIR": str(work / f"cache-{workload}-{load}")}
    out = work / f"out-{workload}-{load}"
    group = busy_loops(load)
    try:
        time.sleep(2.0 if group else 0.0)
        before = os.getloadavg()[0]
        proc = subprocess.Popen(
            command(workload, out), env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
        )
        assert proc.stderr is not None
        said = None
        for raw in proc.stderr:
            if said is None and b"parity: estimate:" in raw:
                said = time.monotonic()
        code = proc.wait()
        end = time.monotonic()
        after = os.getloadavg()[0]
    finally:
        stop(group)
    info = json.loads((out / "baseline" / "side.json").read_text())["stop"]
    est = info["estimate"]
    planned = sum(p["seconds"] or 0.0 for p in est["phases"] if p.get("cut") is None)
    planned += est.get("rounds_s", 0.0)  # the rounds the budget leaves room for
    ref = next((p for p in est["phases"] if p["name"] == "fp64 reference"), None)
    return Row(
        workload=workload,
        load=load,
        before=before,
        after=after,
        estimate_s=planned,
        actual_s=end - (said if said is not None else end),
        reference_est_s=ref["seconds"] if ref else None,
        reference_s=info.get("probes", {}).get("fp64 reference"),
        exit_code=code,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default=",".join(BUILTINS))
    parser.add_argument("--load", type=int, nargs="+", default=[0, 2])
    args = parser.parse_args()
    print(load_line())
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="parity-estimate-") as tmp:
        for load in args.load:
            for workload in args.workloads.split(","):
                row = one(workload, load, Path(tmp))
                rows.append(row)
                print(
                    f"{workload} +{load} busy: estimate {row.estimate_s:.0f} s, "
                    f"actual {row.actual_s:.0f} s (load {row.before:.1f} -> {row.after:.1f})",
                    flush=True,
                )
    print(
        table(
            [
                "built-in",
                "busy loops",
                "load before/after",
                "estimate s",
                "actual s",
                "factor",
                "fp64 ref est/actual s",
                "exit",
            ],
            [
                (
                    r.workload,
                    r.load,
                    f"{r.before:.1f} / {r.after:.1f}",
                    f"{r.estimate_s:.0f}",
                    f"{r.actual_s:.0f}",
                    f"{r.factor:.2f}",
                    f"{r.reference_est_s or 0:.1f} / {r.reference_s or 0:.1f}",
                    r.exit_code,
                )
                for r in rows
            ],
        )
    )
    print("command: " + " ".join(command("BUILTIN", Path("OUT"))) + " (PARITY_CACHE_DIR empty)")
    worst = max(r.factor for r in rows)
    verdict = "PASS" if worst <= WITHIN else "FAIL"
    print(f"RESULT: estimate within {worst:.2f}x of actual at worst (<= {WITHIN:g}x) {verdict}")
    print(load_line())


if __name__ == "__main__":
    main()
