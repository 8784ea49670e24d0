"""How long a driver's first join to a freshly started Ray cluster takes, with gRPC's fork
handlers on the head as grpcio leaves them, all on, and as the test cluster sets them (off).

The head's Ray client proxy starts a server process for each driver that joins
(``ray.util.client.server.proxier``), forking it while its own gRPC threads run. With
grpcio's fork handlers as it leaves them (its C core's on, its Python layer's off), that
child can die at once (``Check failed: next_worker->state == KICKED``,
ray-project/ray#63202); the driver then waits the head's
channel timeout (``RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S``) before parity joins again
(``parity.cluster.address.connect``). The test cluster starts its nodes with
``GRPC_ENABLE_FORK_SUPPORT=false`` (``parity.testing.raycluster.RAY_ENV``).

Each start is a fresh local cluster (``parity.testing.raycluster``: a head and two worker
nodes), the three settings in turn; on each, ``--joins`` drivers join one after another,
each a fresh process calling parity's ``connect``. Per start: each join's wall time and
the per-client servers the head's proxy saw die (its log). ``--load N`` runs N busy loops
throughout (the suite's other workers keep the machine busy while the cluster tests run).

    .venv/bin/python benchmarks/cluster_join.py                  # 4 starts a setting, load 3
    .venv/bin/python benchmarks/cluster_join.py --starts 2 --load 0

``--channel-timeout`` (60 s by default, the test cluster's 180 s) bounds what a died server
costs a driver here, so that the setting with failures finishes in minutes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from parity.testing.raycluster import RAY_ENV, local_cluster

FORK = "GRPC_ENABLE_FORK_SUPPORT"
JOIN = (
    "import sys, time\n"
    "from parity.cluster.address import connect\n"
    "t0 = time.perf_counter()\n"
    "connect(sys.argv[1]).shutdown()\n"
    "print(f'{time.perf_counter() - t0:.2f}')\n"
)
#: the head's ``GRPC_ENABLE_FORK_SUPPORT``: unset, grpcio's default (its C core's fork
#: handlers on, its Python layer's off: ``cygrpc.is_fork_support_enabled()`` is False), on
#: in both, and off in both (the test cluster's)
SETTINGS: dict[str, str | None] = {"unset": None, "true": "true", "false": "false"}


@contextmanager
def busy(loops: int) -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(loops)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def one_start(fork: str | None, joins: int, channel_timeout: int) -> tuple[list[float], int]:
    env = {**RAY_ENV, "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": str(channel_timeout)}
    env.pop(FORK, None)
    if fork is not None:
        env[FORK] = fork
    times: list[float] = []
    with local_cluster(env=env) as cluster:
        for _ in range(joins):
            done = subprocess.run(
                [sys.executable, "-c", JOIN, cluster.client],
                capture_output=True, text=True, timeout=10 * channel_timeout,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"a join failed: {done.stderr.strip()[-500:]}")
            times.append(float(done.stdout.strip().splitlines()[-1]))
        return times, cluster.client_server_failures()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=4, help="cluster starts per setting")
    parser.add_argument("--joins", type=int, default=2, help="drivers joining each start")
    parser.add_argument("--load", type=int, default=3, help="busy loops throughout")
    parser.add_argument("--channel-timeout", type=int, default=60)
    args = parser.parse_args()
    os.environ.pop(FORK, None)  # unset means unset on the nodes too
    rows: dict[str, list[tuple[list[float], int]]] = {name: [] for name in SETTINGS}
    began = time.perf_counter()
    with busy(args.load):
        for i in range(args.starts):
            for name, fork in SETTINGS.items():
                times, failed = one_start(fork, args.joins, args.channel_timeout)
                rows[name].append((times, failed))
                joins = ", ".join(f"{t:.1f}" for t in times)
                print(f"start {i + 1} {name}: joins {joins} s; servers died {failed}", flush=True)
    print(
        f"\n{args.starts} starts a setting, {args.joins} joins each, load {args.load}, "
        f"channel timeout {args.channel_timeout} s ({time.perf_counter() - began:.0f} s in all)"
    )
    print(f"| the head's {FORK} | starts whose first join waited | servers died | "
          "first join, median (worst) | later joins, median |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, got in rows.items():
        first = [times[0] for times, _ in got]
        later = [t for times, _ in got for t in times[1:]]
        waited = sum(t > args.channel_timeout for t in first)
        died = sum(failed for _, failed in got)
        later_s = f"{statistics.median(later):.1f} s" if later else "-"
        print(
            f"| {name} | {waited} of {len(got)} | {died} | "
            f"{statistics.median(first):.1f} s ({max(first):.1f} s) | {later_s} |"
        )


if __name__ == "__main__":
    main()
