"""The whole-run references' cost: time and peak memory against a plain run.

For each built-in workload (``mlp-train``, ``gpt-train``, ``gpt-generate``,
``cnn-infer``) at each size, three runs of the same frozen workload, each in its own
fresh worker process through parity's own orchestrator and the same code path
(``runner/modes/reference.py``: load, every step, ``finish()``, the numerics probe):

- ``fp32``: the plain run, float32 on the CPU (the ``expected`` mode with side ``cpu``);
- ``fp64``: the fp64 reference (``reference`` mode) every comparison makes once per
  fingerprint;
- ``bf16``: the expected-error run a bf16 target adds (``expected`` mode, ``cpu+bf16``).

Printed per run: the steps' time (what the bundle's ``metrics.json`` recorded), the
worker's wall time (process start to bundle), the host peak RSS (load and steps), and
the ratios to the plain run; each the median of ``--repeats`` runs (2), interleaved.
Target (issue 14): the fp64 reference of ``gpt-train --size small`` within 3x its fp32
run's time.

    python benchmarks/reference_cost.py            # tiny and small (~1 h on 2 cores)
    python benchmarks/reference_cost.py --quick    # tiny only (~5 min)
    python benchmarks/reference_cost.py --no-bf16  # without the expected-error run
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import load_line

from parity.bundle import Bundle
from parity.measure.orchestrate import JobTemplate, Orchestrator, prepare_workload
from parity.model.job import Mode
from parity.model.spec import SideSpec, WorkloadSpec, parse_side
from parity.runner.launch import Launcher

WORKLOADS = ("mlp-train", "gpt-train", "gpt-generate", "cnn-infer")
RUNS: dict[str, tuple[Mode, str]] = {
    "fp32": ("expected", "cpu"),
    "fp64": ("reference", "cpu"),
    "bf16": ("expected", "cpu+bf16"),
}
TARGET = 3.0
MIB = 1 << 20


@dataclass(frozen=True)
class Cost:
    steps_s: float
    wall_s: float
    peak_rss: int | None


def measure(orch: Orchestrator, template: JobTemplate, name: str, out: Path) -> Cost:
    mode, spec = RUNS[name]
    side: SideSpec = parse_side(spec)
    job = template.job(name, side, mode=mode)
    t0 = time.perf_counter()
    bundle: Bundle = orch.run(job, out / name, label=name)
    wall = time.perf_counter() - t0
    if not bundle.ok or bundle.metrics is None:
        raise SystemExit(f"{name} run failed: {bundle.manifest.reason}")
    metrics = bundle.metrics
    peaks = [p.host_peak_rss for p in (metrics.memory.load, metrics.memory.steps) if p]
    rss = max((p for p in peaks if p is not None), default=None)
    return Cost(steps_s=sum(metrics.step_samples_s), wall_s=wall, peak_rss=rss)


def interleaved(
    template: JobTemplate, names: list[str], out: Path, repeats: int
) -> dict[str, Cost]:
    """Each run ``repeats`` times, in A B C C B A order, each its median figures (a busy
    machine slows whichever run it hits; alternating spreads that over all of them)."""
    seen: dict[str, list[Cost]] = {name: [] for name in names}
    with Orchestrator(out=out) as orch:
        for k in range(repeats):
            for name in names if k % 2 == 0 else reversed(names):
                seen[name].append(measure(orch, template, name, out / f"r{k}"))
    return {
        name: Cost(
            steps_s=statistics.median(c.steps_s for c in costs),
            wall_s=statistics.median(c.wall_s for c in costs),
            peak_rss=max((c.peak_rss for c in costs if c.peak_rss), default=None),
        )
        for name, costs in seen.items()
    }


def row(workload: str, size: str, name: str, cost: Cost, plain: Cost) -> str:
    rss = f"{cost.peak_rss / MIB:.0f}" if cost.peak_rss else "-"
    ratio_rss = f"{cost.peak_rss / plain.peak_rss:.2f}" if cost.peak_rss and plain.peak_rss else "-"
    return (
        f"| {workload} | {size} | {name} | {cost.steps_s:.2f} | {cost.steps_s / plain.steps_s:.2f}"
        f" | {cost.wall_s:.1f} | {cost.wall_s / plain.wall_s:.2f} | {rss} | {ratio_rss} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes only")
    parser.add_argument("--no-bf16", action="store_true", help="skip the expected-error run")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--repeats", type=int, default=2, help="runs of each, interleaved")
    args = parser.parse_args()
    sizes = ("tiny",) if args.quick else ("tiny", "small")
    names = [n for n in RUNS if not (args.no_bf16 and n == "bf16")]
    print(load_line())
    print(
        "| workload | size | run | steps s | x fp32 | worker wall s | x fp32 | peak RSS MiB "
        "| x fp32 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    figure: float | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads.split(","):
            for size in sizes:
                spec = WorkloadSpec(name=workload, size=size)
                with Launcher() as launcher:  # prepared in a worker, as a comparison does
                    prepared = prepare_workload(spec, launcher=launcher, timeout_s=7200)
                template = JobTemplate.of(spec, prepared, timeout_s=7200)
                out = Path(tmp) / f"{workload}-{size}"
                costs = interleaved(template, names, out, args.repeats)
                for name in names:
                    print(row(workload, size, name, costs[name], costs["fp32"]), flush=True)
                print(f"<!-- {load_line()} -->", flush=True)
                if (workload, size) == ("gpt-train", "small"):
                    figure = costs["fp64"].steps_s / costs["fp32"].steps_s
    print(load_line())
    if figure is None:
        print("RESULT: reference_cost gpt-train small not measured (target <= 3x) SKIPPED")
        return
    verdict = "PASS" if figure <= TARGET else "FAIL"
    print(
        f"RESULT: reference_cost fp64/fp32 gpt-train small {figure:.2f}x (target <= 3x) {verdict}"
    )


if __name__ == "__main__":
    main()
