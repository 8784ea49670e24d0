"""Where a command's CPU goes, by kind of process: what the test suite's time is made of.

Runs a command (by default the whole test suite) and reads every process's CPU time from
``/proc`` every ``--every`` seconds while it runs (Linux only), then prints the CPU
seconds and the number of processes of each kind: parity's zygotes and the workers they
fork, spawned workers, pytest's xdist workers, ``python -m parity`` commands, the Ray
cluster, the servers the tests start (PostgreSQL, MLflow, moto, chromium), the rest.

A process that ends between two readings loses what it used since the last one (at the
default 0.2 s, a few percent of a short process). Processes that were running before the
command (the machine's own) count only what they used meanwhile, under "other".

    .venv/bin/python benchmarks/cpu_by_process.py                      # pytest, whole run
    .venv/bin/python benchmarks/cpu_by_process.py -- python -m pytest -m "not slow"
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: Ray's own processes: ``ray start``/``status``, its daemons and workers (``ray::...``)
RAY = re.compile(r"^ray::|/ray/|/bin/ray( |$)|/raylet |/gcs_server ")
DEFAULT = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


@dataclass
class Seen:
    cmd: str
    parent: int
    first_s: float  # CPU when first read (all of it for a process started since)
    last_s: float


def stat_fields(pid: str) -> list[str] | None:
    """A process's ``/proc/PID/stat`` after its name (field 3 on); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def _read(pid: str) -> tuple[tuple[int, int], int, float] | None:
    """(pid, start time) as the key, the parent's pid, and CPU seconds so far."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    return (int(pid), int(fields[19])), int(fields[1]), cpu


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kind(cmd: str, parent_cmd: str) -> str:
    """The kind of a process from its command line (and its parent's: a fork keeps it)."""
    if "parity.runner.zygote" in cmd:
        return "forked worker" if parent_cmd == cmd else "zygote"
    if "parity.runner.worker" in cmd or "torch.distributed.run" in cmd:
        return "spawned worker"
    if RAY.search(cmd):
        return "Ray cluster"
    if "-m parity" in cmd or "bin/parity " in cmd:
        return "parity command"
    if "exec(eval(sys.stdin" in cmd:
        return "xdist worker"
    if "pytest" in cmd:
        return "pytest"
    for server in ("postgres", "mlflow", "moto", "chromium"):
        if server in cmd:
            return server
    return "other"


def measure(command: list[str], every_s: float) -> tuple[int, float, dict[tuple[int, int], Seen]]:
    seen: dict[tuple[int, int], Seen] = {}
    me = os.getpid()
    t0 = time.perf_counter()
    proc = subprocess.Popen(command)
    first = True
    while True:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            read = _read(name)
            if read is None:
                continue
            key, parent, cpu = read
            if key in seen:
                seen[key].last_s = cpu
            else:
                before = first and int(name) != proc.pid
                seen[key] = Seen(_cmdline(key[0]), parent, cpu if before else 0.0, cpu)
        first = False
        if proc.poll() is not None:
            break
        time.sleep(every_s)
    return proc.returncode, time.perf_counter() - t0, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.2, help="seconds between readings")
    parser.add_argument("command", nargs="*", help="the command (default: the whole suite)")
    args = parser.parse_args()
    if not os.path.isdir("/proc/self"):
        sys.exit("cpu_by_process.py reads /proc: Linux only")
    code, wall, seen = measure(args.command or DEFAULT, args.every)
    by_pid = {key[0]: s for key, s in seen.items()}
    cpu: dict[str, float] = {}
    count: Counter[str] = Counter()
    for s in seen.values():
        parent = by_pid.get(s.parent)
        k = kind(s.cmd, parent.cmd if parent else "")
        cpu[k] = cpu.get(k, 0.0) + s.last_s - s.first_s
        count[k] += 1
    total = sum(cpu.values())
    print(f"\nexit {code}; {wall:.1f} s wall; {total:.0f} s CPU ({total / wall:.2f} cores)")
    print(f"{'kind':<16} {'CPU s':>8} {'share':>6} {'processes':>10}")
    for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]):
        print(f"{k:<16} {v:8.1f} {v / total:6.1%} {count[k]:10d}")
    sys.exit(code)


if __name__ == "__main__":
    main()
