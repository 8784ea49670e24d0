"""``parity sweep PLAN``: a matrix of comparisons (workloads x side pairs x sizes x batch
sizes) from one plan, run one after another on this machine or several at once on a Ray
cluster, resumable, with one summary of every verdict.

The plan::

    [sweep]
    workloads = ["mlp-train", "cnn-infer"]
    pairs = [["cpu", "cpu+bf16"], ["cpu", "cpu+threads=1"]]   # baseline, target
    sizes = ["tiny"]                # optional
    batch_sizes = [8]               # optional
    steps = 4                       # optional
    out = "parity-sweeps/first"     # a directory or a URL (s3://...)
    cluster = "ray://HEAD:10001"    # optional: the comparisons on a Ray cluster
    concurrency = 2                 # optional, on a cluster (default: nodes // 2)

    [measure]                       # as in a comparison's plan
    repeats = 2

    [place]                         # as in a comparison's plan
    target = "side-b"

Each comparison goes to ``OUT/CELL`` (``mlp-train-tiny-bs8-cpu-vs-cpu+bf16``). One that
finished (its ``verdict.json``, or its commit marker at a URL) is never run again:
``--resume`` finishes what is missing, and without it a sweep that has finished ones is
refused.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomllib

from parity import storage
from parity.cluster.address import cluster_address
from parity.errors import ParityError, PlanError, UsageError
from parity.model.verdict import Verdict
from parity.request import REQUEST_FILE, CompareRequest

SWEEP_KEYS = ("workloads", "pairs", "sizes", "batch_sizes", "steps", "out", "cluster")
MEASURE_KEYS = ("repeats", "precision", "budget_s", "compliance", "timeout_s")


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One comparison of the matrix."""

    name: str
    out: str
    #: the comparison's options, as the Python API takes them
    options: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How a cell ended: its verdict, or the error that stopped it."""

    cell: Cell
    verdict: Verdict | None = None
    error: str | None = None
    ran: bool = True


@dataclass(frozen=True, kw_only=True)
class SweepPlan:
    cells: tuple[Cell, ...]
    out: str
    cluster: str | None
    concurrency: int | None


def _list(table: dict[str, Any], key: str, default: list[Any]) -> list[Any]:
    value = table.get(key, default)
    if not isinstance(value, list) or not value:
        raise PlanError(f"sweep.{key} must be a non-empty list, got {value!r}")
    return value


def load_sweep(path: Path) -> SweepPlan:
    """The plan's matrix of cells, each a comparison's options (validated as requests)."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PlanError(f"sweep plan {path} cannot be read: {exc}") from None
    sweep = data.get("sweep")
    if not isinstance(sweep, dict):
        raise PlanError(f"{path} has no [sweep] table: see parity sweep --help")
    unknown = sorted(set(sweep) - {*SWEEP_KEYS, "concurrency"})
    if unknown:
        raise PlanError(f"{path}: sweep.{unknown[0]} is not a sweep key: use {SWEEP_KEYS}")
    out = sweep.get("out")
    if not isinstance(out, str) or not out:
        raise PlanError(f"{path}: sweep.out must name a directory or URL")
    pairs = _list(sweep, "pairs", [])
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise PlanError(f"{path}: sweep.pairs must be [baseline, target] lists")
    measure = {k: v for k, v in (data.get("measure") or {}).items() if k in MEASURE_KEYS}
    place = data.get("place") or {}
    cells = []
    for workload, (base, target), size, batch in itertools.product(
        _list(sweep, "workloads", []), pairs, _list(sweep, "sizes", [None]),
        _list(sweep, "batch_sizes", [None]),
    ):  # fmt: skip
        name = (
            "-".join(str(p) for p in (workload, size, f"bs{batch}" if batch else None) if p)
            + f"-{base}-vs-{target}"
        )
        name = re.sub(r"[^A-Za-z0-9+=.,_-]", "_", name)
        given = {
            "workload": workload, "baseline": base, "target": target, "size": size,
            "batch_size": batch, "steps": sweep.get("steps"), "out": f"{out.rstrip('/')}/{name}",
            "cluster": sweep.get("cluster"), "place": place or None, **measure,
        }  # fmt: skip
        options = {k: v for k, v in given.items() if v is not None}
        try:
            CompareRequest.from_kwargs(**options)
        except UsageError as exc:
            raise PlanError(f"{path}: {name}: {exc}") from None
        cells.append(Cell(name=name, out=str(options["out"]), options=options))
    concurrency = sweep.get("concurrency")
    return SweepPlan(
        cells=tuple(cells), out=out, cluster=sweep.get("cluster"), concurrency=concurrency
    )


def finished(cell: Cell) -> Verdict | None:
    """The verdict of a cell that finished before (None: it did not)."""
    from parity.bundle import is_comparison, read_verdict

    try:
        if storage.is_url(cell.out):
            if not storage.exists(cell.out):
                return None
            return read_verdict(storage.fetch(cell.out))[0]
        where = storage.local(cell.out)
        return read_verdict(where)[0] if is_comparison(where) else None
    except ParityError:
        return None


def _slots(plan: SweepPlan) -> int:
    """How many comparisons run at once: one on this machine; on a cluster as many as
    it has worker nodes for (two sides each), or the plan's ``concurrency``."""
    if plan.cluster is None:
        return 1
    if plan.concurrency:
        return max(1, int(plan.concurrency))
    from parity.cluster.address import connect

    ray = connect(plan.cluster)
    workers = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]
    return max(1, len(workers) // 2)


def run_sweep(
    plan: SweepPlan, *, resume: bool, on_change: Callable[[Cell, str], None] | None = None
) -> list[Outcome]:
    """Every cell: the finished ones read back (refused without ``resume``), the missing
    ones compared, as many at once as ``_slots`` allows."""
    from parity.runner.kept import keep_zygotes

    notify = on_change or (lambda cell, state: None)
    done = {c.name: v for c in plan.cells if (v := finished(c)) is not None}
    if done and not resume:
        raise UsageError(
            f"{plan.out} already holds {len(done)} finished comparison(s) of this sweep: "
            "pass --resume to finish the missing ones, or choose another sweep.out"
        )
    with keep_zygotes():  # the cells' comparisons fork from one zygote: one import torch
        return _run_cells(plan, done, notify)


def _run_cells(
    plan: SweepPlan, done: dict[str, Verdict], notify: Callable[[Cell, str], None]
) -> list[Outcome]:
    from concurrent.futures import ThreadPoolExecutor

    from parity import api
    from parity.measure.remote import resume_target

    if plan.cluster is not None:
        cluster_address(plan.cluster)  # the address checked before anything runs
    else:  # every side of every cell to run, before the first comparison starts
        preflight_cells([c for c in plan.cells if c.name not in done])
    for cell in plan.cells:
        notify(cell, "done" if cell.name in done else "pending")

    def one(cell: Cell) -> Outcome:
        if cell.name in done:
            return Outcome(cell=cell, verdict=done[cell.name], ran=False)
        notify(cell, "running")
        partial = None if storage.is_url(cell.out) else storage.local(cell.out)
        try:
            if partial is None and storage.unfinished(cell.out):
                where, published = resume_target(cell.out)  # its uploaded bundles kept
                result = api.resume(where, published=published)
            elif partial is not None and (partial / REQUEST_FILE).is_file():
                result = api.resume(partial)  # stopped mid-way: its complete bundles kept
            else:
                result = api.compare(CompareRequest.from_kwargs(**cell.options))
        except ParityError as exc:
            notify(cell, "error")
            return Outcome(cell=cell, error=str(exc))
        notify(cell, "PASS" if result.verdict.passed else "FAIL")
        return Outcome(cell=cell, verdict=result.verdict)

    with ThreadPoolExecutor(_slots(plan)) as pool:
        return list(pool.map(one, plan.cells))


def preflight_cells(cells: list[Cell]) -> None:
    """The sides of ``cells`` through the one pre-flight (``parity.runner.prepare.preflight``): a
    side this machine cannot run is one ``DeviceError`` before any cell runs. A cell whose
    options are refused is left to its comparison (an error in its row)."""
    from parity.runner.launch import Launcher
    from parity.runner.prepare import preflight

    sides = []
    for cell in cells:
        try:
            request = CompareRequest.from_kwargs(**cell.options)
        except ParityError:
            continue
        sides += [request.baseline, request.target]
    if sides:
        with Launcher() as launcher:
            preflight(sides, launcher=launcher)


def summary_rows(outcomes: list[Outcome]) -> list[dict[str, str]]:
    """One row per cell: result, speed ratio with its interval, quality, cost."""
    rows = []
    for o in outcomes:
        v = o.verdict
        speed = v.speed if v else None
        quality = v.quality if v else None
        cost = v.cost.cost_ratio if v and v.cost else None
        rows.append(
            {
                "comparison": o.cell.name,
                "result": ("PASS" if v.passed else "FAIL") if v else "error",
                "speed": (
                    f"{speed.ratio:.3g} [{speed.interval.low:.3g}, {speed.interval.high:.3g}] "
                    f"{speed.verdict}"
                )
                if speed
                else "-",
                "quality": ("pass" if quality.passed else "fail") if quality else "-",
                "cost": f"{cost:.3g}x" if cost is not None else "-",
                "ran": "now" if o.ran else "before",
                "note": (o.error or "")[:200],
            }
        )
    return rows


def with_out(plan: SweepPlan, out: str) -> SweepPlan:
    cells = tuple(
        replace(c, out=f"{out.rstrip('/')}/{c.name}",
                options={**c.options, "out": f"{out.rstrip('/')}/{c.name}"})
        for c in plan.cells
    )  # fmt: skip
    return replace(plan, cells=cells, out=out)
