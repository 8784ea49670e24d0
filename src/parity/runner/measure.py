"""Measuring a comparison: repeats in fresh processes, interleaved, until the speed ratio
is known well enough or the time budget is spent; then the target's compliance runs.

Order: round ``k`` runs one process per side, baseline first on even rounds and target
first on odd ones (A B B A A B ...), so linear drift of the machine cancels from the
ratio. With ``repeats`` fixed, exactly that many rounds run. Otherwise rounds continue
until the speed ratio's interval (``parity.stats.ratio_ci``) is no longer provisional and
its half-width is within ``precision`` of the ratio, the ``budget_s`` runs out, or
``max_repeats`` is reached (at least ``min_repeats`` rounds always run); ``side.json``
records which ended it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.bundle import MANIFEST, SIDE_FILE, load_bundle, repeat_name, write_json
from parity.judge.speed import steady_samples
from parity.runner.job import Job
from parity.runner.launch import EventHandler, run_job
from parity.stats import Processes, interleaved_order, ratio_ci, should_stop

ROLES = ("baseline", "target")


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """How much to measure."""

    repeats: int | None = None
    precision: float = 0.02
    budget_s: float = 30.0
    min_repeats: int = 2
    max_repeats: int = 30
    compliance: bool = True
    timeout_s: float = 900.0
    #: torchrun pass-through for multi-node sides: nnodes, rdzv_endpoint
    torchrun: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.repeats is not None and self.repeats < 1:
            raise ValueError(f"--repeats must be at least 1, got {self.repeats}")
        if not 0 < self.precision < 1:
            raise ValueError(f"--precision must be a fraction in (0, 1), got {self.precision}")
        if self.budget_s <= 0:
            raise ValueError(f"--budget must be positive seconds, got {self.budget_s}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "repeats": self.repeats,
            "precision": self.precision,
            "budget_s": self.budget_s,
            "min_repeats": self.min_repeats,
            "max_repeats": self.max_repeats,
            "compliance": self.compliance,
            "timeout_s": self.timeout_s,
            "torchrun": dict(self.torchrun),
        }


JobMaker = Callable[[str, int], Job]
Progress = Callable[[str], EventHandler | None]


def measure(
    make_job: JobMaker,
    out: Path,
    plan: Plan,
    progress: Progress,
    compliance_jobs: dict[str, Job] | None = None,
) -> dict[str, Any]:
    """Run the rounds and the compliance runs; return the stop decision."""
    start = time.monotonic()
    rounds = plan.repeats if plan.repeats is not None else plan.max_repeats
    order = interleaved_order(rounds, ROLES)
    samples: dict[str, list[list[float]]] = {role: [] for role in ROLES}
    failed = False
    stop: dict[str, Any] | None = None
    for i in range(0, len(order), len(ROLES)):
        for role, k in order[i : i + len(ROLES)]:
            path = out / role / repeat_name(k)
            if not (path / MANIFEST).is_file():  # a complete bundle from before a resume stays
                run_job(
                    make_job(role, k),
                    path,
                    timeout_s=plan.timeout_s,
                    on_event=progress(f"{role} {repeat_name(k)}"),
                )
            bundle = load_bundle(path)
            if bundle.ok:
                samples[role].append(steady_samples(bundle))
            else:
                failed = True
        done = i // len(ROLES) + 1
        stop = _decide(plan, samples, done, time.monotonic() - start, failed)
        if stop is not None:
            break
    assert stop is not None
    stop["elapsed_s"] = time.monotonic() - start
    stop["order"] = [f"{role} {repeat_name(k)}" for role, k in order[: 2 * _rounds(out)]]
    if plan.compliance and not failed:
        for name, job in (compliance_jobs or {}).items():
            if (out / "target" / name / MANIFEST).is_file():
                continue
            run_job(
                job,
                out / "target" / name,
                timeout_s=plan.timeout_s,
                on_event=progress(f"target {name}"),
            )
    for role in ROLES:
        write_json(out / role / SIDE_FILE, {"stop": stop, "plan": plan.to_dict()})
    return stop


def _rounds(out: Path) -> int:
    return len([p for p in (out / "baseline").iterdir() if p.name.startswith("r")])


def _decide(
    plan: Plan, samples: dict[str, list[list[float]]], done: int, elapsed: float, failed: bool
) -> dict[str, Any] | None:
    if failed:
        return {
            "reason": "failure",
            "message": f"a side failed in round {done}: no further repeats were run",
        }
    if plan.repeats is not None:
        if done >= plan.repeats:
            return {"reason": "repeats", "message": f"{done} repeat(s) per side, as asked"}
        return None
    if done < plan.min_repeats:
        return None
    usable = {role: [s for s in reps if s] for role, reps in samples.items()}
    if not all(usable.values()):
        return {
            "reason": "no_samples",
            "message": "no steady-state samples: raise --steps so a run has more than one",
        }
    ci = ratio_ci(
        Processes.from_steps(usable["baseline"], "baseline"),
        Processes.from_steps(usable["target"], "target"),
    )
    decision = should_stop(
        ci,
        precision=plan.precision,
        elapsed_s=elapsed,
        budget_s=plan.budget_s,
        repeats=done,
        min_repeats=plan.min_repeats,
        max_repeats=plan.max_repeats,
    )
    return decision.to_dict() if decision is not None else None
