"""Per-repeat start cost: a worker forked from the zygote, a spawned one, and ``import torch``.

Every repeat of a comparison is a fresh process. Spawned (the launcher before issue 16,
still used for torchrun and plugin devices, ``PARITY_LAUNCHER=spawn``), each pays an
interpreter and ``import torch`` before its first step; forked from the zygote, which
imported torch once and touched no device, it does not. This script runs, in rounds that
interleave them (ABBA-like rotation, so drift in the machine's load hits all alike):

- ``python -c "import torch"``: wall time of the subprocess;
- a forked repeat and a spawned repeat of ``mlp-train`` (tiny) on ``cpu``, each through an
  ``Orchestrator`` of its own (the fork one's zygote started before the first round: that
  is the comparison's set-up, printed apart).

For each repeat, from its ``metrics.json``: ``start_import_s`` (the parent's launch to the
worker's imports done and device ready) and ``+ load_s`` (model and data built and moved
to the device: ready for the first step), and the parent's wall time for the whole run.

Figure: median(fork, launch to first step) over median(``import torch``). Target (issue
16): at most 0.5 s, or at most 15% of ``import torch`` measured in the same run.

    .venv/bin/python benchmarks/start_cost.py            # 9 rounds (~1 min)
    .venv/bin/python benchmarks/start_cost.py --quick    # 3 rounds
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import load_line, table

from parity.bundle import Bundle
from parity.measure.orchestrate import JobTemplate, Orchestrator
from parity.model.spec import SideSpec, WorkloadSpec
from parity.runner.launch import Launcher
from parity.workloads import resolve
from parity.workloads.frozen import freeze

LIMIT_S = 0.5
LIMIT_SHARE = 0.15
IMPORT = "import torch"


def template() -> JobTemplate:
    spec = WorkloadSpec(name="mlp-train")
    frozen = freeze(resolve(spec))
    return JobTemplate(
        workload=spec,
        frozen=str(frozen.path),
        fingerprint=frozen.fingerprint,
        parts=frozen.parts,
        description=frozen.description,
        timeout_s=600.0,
    )


def import_torch() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORT], check=True)
    return time.perf_counter() - t0


def repeat(orch: Orchestrator, tmpl: JobTemplate, k: int) -> tuple[float, float, float]:
    """(launch to ready, launch to first step, parent's wall) of one repeat."""
    job = tmpl.job("baseline", SideSpec(device="cpu"), repeat=k + 1)
    t0 = time.perf_counter()
    bundle: Bundle = orch.run(job, orch.out / f"r{k:02d}", label=f"r{k:02d}")
    wall = time.perf_counter() - t0
    if not bundle.ok or bundle.metrics is None:
        raise SystemExit(f"the repeat failed: {bundle.manifest.reason}")
    phases = bundle.metrics.phases
    if phases.start_import_s is None or phases.load_s is None:
        raise SystemExit(f"no start phases in {orch.out}")
    return phases.start_import_s, phases.start_import_s + phases.load_s, wall


def med(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--rounds", type=int, help="rounds (default 9, quick 3)")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 9)
    print(f"start_cost: {time.strftime('%Y-%m-%d %H:%M:%S')}, {load_line()}")
    tmpl = template()
    with tempfile.TemporaryDirectory(prefix="parity-start-") as tmp:
        fork = Orchestrator(out=Path(tmp) / "fork", launcher=Launcher(fork=True))
        spawn = Orchestrator(out=Path(tmp) / "spawn", launcher=Launcher(fork=False))
        t0 = time.perf_counter()
        fork.start_budget(tmpl.job("baseline", SideSpec(device="cpu")))
        zygote_s = time.perf_counter() - t0
        if fork.launcher.zygote is None:
            raise SystemExit(f"the zygote did not start: {fork.launcher.broken}")
        got: dict[str, list[tuple[float, float, float]]] = {"fork": [], "spawn": []}
        imports: list[float] = []
        order = ["import", "fork", "spawn"]
        try:
            for k in range(rounds):
                for what in order[k % 3 :] + order[: k % 3]:  # each first in turn
                    if what == "import":
                        imports.append(import_torch())
                    else:
                        orch = fork if what == "fork" else spawn
                        got[what].append(repeat(orch, tmpl, k))
        finally:
            fork.close()
            spawn.close()
    torch_s = med(imports)
    rows = [(f"python -c '{IMPORT}'", "-", f"{torch_s:.3f}", f"{torch_s:.3f}", "1.000")]
    for what, runs in got.items():
        ready, first, wall = (med([r[i] for r in runs]) for i in range(3))
        rows.append(
            (
                f"{what}ed repeat",
                f"{ready:.3f}",
                f"{first:.3f}",
                f"{wall:.3f}",
                f"{first / torch_s:.3f}",
            )
        )
    print(f"workload mlp-train (tiny) on cpu, {rounds} rounds; medians in seconds")
    print(
        table(
            ("what", "launch->ready", "launch->first step", "wall", "first step / import"),
            rows,
        )
    )
    print(f"zygote start (set-up, once per comparison): {zygote_s:.2f} s")
    fork_first = med([r[1] for r in got["fork"]])
    spread = f"{min(r[1] for r in got['fork']):.3f}-{max(r[1] for r in got['fork']):.3f} s"
    print(f"forked launch->first step over rounds: {spread}")
    print(f"after: {load_line()}")
    share = fork_first / torch_s
    ok = fork_first <= LIMIT_S or share <= LIMIT_SHARE
    print(
        f"RESULT: start_cost {fork_first:.3f}s ({share:.1%} of import torch {torch_s:.2f}s) "
        f"(target <= {LIMIT_S} s or <= {LIMIT_SHARE:.0%}) {'PASS' if ok else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
