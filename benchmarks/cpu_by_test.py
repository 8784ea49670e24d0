"""Each test's CPU, its own and its processes': where a CPU-bound suite's time goes.

On a machine with fewer cores than the suite has work, a test's wall time says little
(it waits for the others); its CPU says what it costs the run. Loaded into pytest as a
plugin, this reads, before and after each test (setup, call and teardown together), the
CPU of the test process, of the children it reaped and of every living descendant with
what that descendant reaped (``/proc``, Linux only), and writes one line per test. A
process reparented away from the test (a daemon, a Ray node) is not counted; a session
fixture's set-up counts to the first test that asks for it.

    PYTHONPATH=benchmarks .venv/bin/python -m pytest -p cpu_by_test -q   # writes the lines
    .venv/bin/python benchmarks/cpu_by_test.py                           # prints the summary

The lines go to ``$CPU_BY_TEST_DIR`` (default ``/tmp/cpu-by-test``), one file per xdist
worker; the folder is emptied at the start of a run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from cpu_by_process import TICK, stat_fields  # this folder is on the path either way

OUT = Path(os.environ.get("CPU_BY_TEST_DIR", "/tmp/cpu-by-test"))


def _stat(pid: str) -> tuple[int, float] | None:
    """A process's parent and its CPU with what it reaped, in seconds."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    return int(fields[1]), sum(int(v) for v in fields[11:15]) / TICK


def tree_cpu() -> float:
    """This process's CPU, its reaped children's, and its living descendants'."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    parents: dict[int, tuple[int, float]] = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and (seen := _stat(pid)) is not None:
            parents[int(pid)] = seen
    mine = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, (parent, _) in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return total + sum(parents[p][1] for p in mine if p != os.getpid() and p in parents)


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:  # the controller (or a run without xdist) starts afresh
        OUT.mkdir(parents=True, exist_ok=True)
        for old in OUT.glob("*.jsonl"):
            old.unlink()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    wall0, cpu0 = time.monotonic(), tree_cpu()
    yield
    line = {"test": item.nodeid, "wall": time.monotonic() - wall0, "cpu": tree_cpu() - cpu0}
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(OUT / f"{name}.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=OUT)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    rows = [json.loads(x) for f in args.dir.glob("*.jsonl") for x in f.read_text().splitlines()]
    if not rows:
        raise SystemExit(f"no lines in {args.dir}: run pytest with -p cpu_by_test first")
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        acc = by_file[r["test"].split("::")[0]]
        acc[0] += r["cpu"]
        acc[1] += r["wall"]
        acc[2] += 1
    total = sum(r["cpu"] for r in rows)
    print(f"{len(rows)} tests, {total:.0f} s of CPU, {sum(r['wall'] for r in rows):.0f} s of wall")
    print(f"\nthe {args.top} tests that used most CPU (cpu s, wall s):")
    for r in sorted(rows, key=lambda r: -r["cpu"])[: args.top]:
        print(f"{r['cpu']:8.1f} {r['wall']:8.1f}  {r['test']}")
    print("\nby file (cpu s, wall s, tests):")
    for name, (cpu, wall, n) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"{cpu:8.1f} {wall:8.1f} {int(n):5d}  {name}")


if __name__ == "__main__":
    main()
