"""How fast bad cluster input is refused: wall time of each refusal, as a fresh process.

Starts a local cluster (``parity.testing.raycluster``: a head and two worker nodes with the
resources ``side-a`` and ``side-b``), then runs each bad command ``--rounds`` times,
interleaved (so the machine's load hits all alike), and prints each one's median and
worst wall time against the issue's bound (issue 27: exit 2, one line, within 15 s):

- ``compare --cluster ray://127.0.0.1:FREE``: an address nobody listens on (refused);
- ``compare --cluster ray://192.0.2.1:10001``: an address that never answers (TEST-NET-1,
  dropped: the connect timeout, ``CONNECT_TIMEOUT_S``, bounds it);
- ``compare / check soak / scale --place ...=neuron_cores``: a resource no node has.

    .venv/bin/python benchmarks/cluster_refusal.py               # 3 rounds
    .venv/bin/python benchmarks/cluster_refusal.py --rounds 1

Each must also be what the README promises (exit code 2, one line on stderr, nothing
written); one that is not is reported and fails the result. Nothing here imports torch.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from parity.testing.raycluster import free_port, local_cluster

BOUND_S = 15.0
LEAN = ("--repeats", "2", "--no-compliance", "--steps", "4")


def commands(client: str, out: Path) -> dict[str, list[str]]:
    parity = [sys.executable, "-m", "parity"]
    compare = [*parity, "compare", "mlp-train", "--target", "cpu+bf16", *LEAN]
    return {
        "compare, nobody listens": [
            *compare, "--cluster", f"ray://127.0.0.1:{free_port()}", "--out", str(out / "a"),
        ],
        "compare, never answers": [
            *compare, "--cluster", "ray://192.0.2.1:10001", "--out", str(out / "b"),
        ],
        "compare, no such resource": [
            *compare, "--cluster", client, "--place", "target=neuron_cores",
            "--out", str(out / "c"),
        ],
        "check soak, no such resource": [
            *parity, "check", "soak", "cnn-infer", "--device", "cpu", "--cluster", client,
            "--place", "soak=neuron_cores", "--out", str(out / "d"),
        ],
        "scale, no such resource": [
            *parity, "scale", "mlp-train", "--device", "cpu", "--cluster", client,
            "--place", "scale=neuron_cores", "--out", str(out / "e"),
        ],
    }  # fmt: skip


def timed(argv: list[str]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    return time.perf_counter() - t0, done.returncode, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="parity-refusal-"))
    times: dict[str, list[float]] = {}
    wrong: list[str] = []
    with local_cluster() as cluster:
        for _ in range(args.rounds):
            for name, argv in commands(cluster.client, out).items():
                took, rc, err = timed(argv)
                times.setdefault(name, []).append(took)
                if rc != 2 or len(err.strip().splitlines()) != 1:
                    wrong.append(f"{name}: exit {rc}, stderr {err.strip()[-300:]!r}")
    written = sorted(p.name for p in out.iterdir())
    width = max(len(n) for n in times)
    print(f"{'refusal':<{width}}  median (s)  worst (s)")
    for name, seen in times.items():
        print(f"{name:<{width}}  {statistics.median(seen):10.2f}  {max(seen):9.2f}")
    worst = max(max(seen) for seen in times.values())
    for line in wrong + ([f"written: {written}"] if written else []):
        print("NOT AS PROMISED:", line)
    ok = worst < BOUND_S and not wrong and not written
    print(f"RESULT: cluster_refusal worst {worst:.2f} s (bound {BOUND_S:g} s) "
          f"{'PASS' if ok else 'FAIL'}")  # fmt: skip


if __name__ == "__main__":
    main()
