"""Synthetic sides for verdict tests: seeded, fixed, in memory (``side_runs``) or written
(``side_dir``); no worker processes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from parity.bundle import repeat_name
from parity.model.bundle import SideRuns
from parity.model.metrics import Memory
from parity.model.side import MeasurePlan, MeasureRecord, Stop
from parity.model.stack import Package
from tests.fixtures import bundles

LOSSES = [2.3 - 0.03 * i for i in range(40)]


def side_runs(
    root: Path,
    role: str,
    *,
    side: str,
    step_s: float,
    noise: float = 0.02,
    repeats: int = 3,
    seed: int = 0,
    losses: list[float] | None = None,
    logits_scale: float = 1.0,
    parts: dict[str, Any] | None = None,
    device_name: str = "cpu",
    packages: tuple[Package, ...] | None = None,
    parameters: int | None = None,
    memory: Memory | None = None,
    device_memory: int | None = None,
) -> SideRuns:
    """A side at ``root/role`` with ``repeats`` bundles whose steady steps have median
    ``step_s`` (and ``packages`` installed: else a digest alone), in memory."""
    path = root / role
    rng = np.random.default_rng(seed)
    work = bundles.workload_ref(fingerprint_parts=bundles.parts(**(parts or {})))
    if parameters is not None:  # the shape a production shape is compared with
        described = replace(work.description, parameters=parameters, optimizer="adamw")
        work = replace(work, description=described)
    # made in Python floats: torch's vectorised linspace may round otherwise on another CPU
    grid = [(-1 + 2 * i / 39) * logits_scale for i in range(40)]
    # 320 rows, every one decisive: enough for the top-1 gate to decide (299 needed)
    logits = torch.tensor(grid, dtype=torch.float32).view(4, 10).repeat(80, 1)
    made = []
    for k in range(repeats):
        process = float(np.exp(rng.normal(0, noise / 2)))
        steady = (step_s * process * np.exp(rng.normal(0, noise, 39))).tolist()
        man = bundles.manifest(
            role=role, spec=side, workload=work, repeat=k, device_name=device_name
        )
        if packages is not None:
            man = bundles.with_packages(man, packages)
        if device_memory is not None and man.environment is not None:
            device = replace(
                man.environment.device, memory_bytes=device_memory, memory_source="stated"
            )
            man = replace(man, environment=replace(man.environment, device=device))
        run_metrics = bundles.metrics([step_s * 20, *steady])
        if memory is not None:
            run_metrics = replace(run_metrics, memory=memory)
        made.append(
            bundles.make_bundle(
                path / repeat_name(k),
                man,
                run_metrics=run_metrics,
                losses=list(losses or LOSSES),
                tensors={"eval_logits": logits},
            )
        )
    stop = Stop(reason="repeats", message=f"{repeats} repeat(s) per side, as asked")
    info = MeasureRecord(stop=stop, plan=MeasurePlan(repeats=repeats))
    return SideRuns(path=path, repeats=tuple(made), info=info)


def side_dir(root: Path, role: str, **given: Any) -> Path:
    """``side_runs``' side written at ``root/role``, as a comparison leaves it."""
    return bundles.save_side(side_runs(root, role, **given))
