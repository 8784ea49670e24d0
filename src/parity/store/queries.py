"""Reading the history: the runs newest first (``parity ls``), one run whole (``parity
show``), a metric over time (``parity trend``); the ``Store`` answers through these."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import RowMapping, Select, and_, select

from parity.bundle import COMPLIANCE_RUNS
from parity.errors import UsageError
from parity.model.codec import decode, loads
from parity.model.history import BundleRow, RunRecord, RunRow, TrendPoint
from parity.model.serving import ServeVerdict
from parity.model.verdict import Verdict
from parity.store.figures import BUNDLE_METRICS, COMPARISON_METRICS
from parity.store.schema import bundles, comparisons, metrics, serving
from parity.store.walk import device_matches, matches


class Reader(Protocol):
    """What a query needs of the index (``store.index.Store``)."""

    #: where the index is, as parity shows it
    path: str

    def read(self, stmt: Select[Any]) -> Sequence[RowMapping]: ...


def runs(
    store: Reader, *, workload: str | None = None, device: str | None = None, limit: int = 50
) -> list[RunRow]:
    """Comparisons and stand-alone bundles, newest first."""
    rows: list[RunRow] = []
    for r in _comparisons(store, workload, device):
        rows.append(
            RunRow(
                id=r["id"],
                type="compare",
                time_unix=r["time_unix"],
                workload=r["workload"],
                size=r["size"],
                sides=f"{r['baseline_spec']} -> {r['target_spec']}",
                result="PASS" if r["passed"] else "FAIL",
                speed_ratio=r["speed_ratio"],
                speed_verdict=r["speed_verdict"],
                path=r["path"],
            )
        )
    if not device:  # a serving comparison has endpoints, not devices
        rows += [
            RunRow(
                id=r["id"],
                type="serve",
                time_unix=r["time_unix"],
                workload=r["model"],
                size=None,
                sides=f"{r['baseline_url']} -> {r['target_url']}",
                result=str(r["outcome"]).upper(),
                speed_ratio=r["ratio"],
                speed_verdict="highest rate within the limits",
                path=r["path"],
            )
            for r in store.read(select(serving))
            if matches(r["model"], workload)
        ]
    median = and_(metrics.c.bundle_id == bundles.c.id, metrics.c.name == "median_step_s")
    alone = store.read(
        select(bundles, metrics.c.value.label("median"))
        .select_from(bundles.outerjoin(metrics, median))
        .where(bundles.c.comparison_id.is_(None))
    )
    for r in alone:
        if not matches(r["workload"], workload):
            continue
        if device and not device_matches(r, "run", device):
            continue
        rows.append(
            RunRow(
                id=r["id"],
                type="run",
                time_unix=r["finished_unix"] or r["started_unix"] or r["indexed_unix"],
                workload=r["workload"],
                size=r["size"],
                sides=r["side_spec"],
                result=r["status"],
                median_step_s=r["median"],
                path=r["path"],
            )
        )
    rows.sort(key=lambda x: (x.time_unix or 0.0, x.id), reverse=True)
    return rows[:limit]


def resolve(store: Reader, ident: str) -> tuple[str, str]:
    """An id or unique id prefix -> (table, full id); UsageError when none or several."""
    ident = ident.strip()
    if not ident:
        raise UsageError("give a run id as parity ls shows it, e.g. c1a2b3c4")
    hits = [
        (table.name, r["id"])
        for table in (comparisons, serving, bundles)
        for r in store.read(select(table.c.id).where(table.c.id.startswith(ident, autoescape=True)))
    ]
    if not hits:
        raise UsageError(
            f"no run {ident!r} in the index {store.path}: see parity ls, or parity reindex "
            "DIRS if the index is stale"
        )
    if len(hits) > 1:
        raise UsageError(
            f"{ident!r} is ambiguous ({', '.join(h[1] for h in hits[:5])}): give more of the id"
        )
    return hits[0]


def show(store: Reader, ident: str) -> RunRecord:
    """One comparison (with its bundles and verdict) or one bundle (with its figures)."""
    table, rid = resolve(store, ident)
    if table == "serving":
        r = store.read(select(serving).where(serving.c.id == rid))[0]
        return RunRecord(
            id=rid,
            type="serve",
            path=r["path"],
            workload=r["model"],
            size=None,
            time_unix=r["time_unix"],
            sides=f"{r['baseline_url']} -> {r['target_url']}",
            passed=r["outcome"] == "pass",
            exit_code=r["exit_code"],
            serving=decode(ServeVerdict, loads(r["verdict"])),
        )
    if table == "comparisons":
        r = store.read(select(comparisons).where(comparisons.c.id == rid))[0]
        members = store.read(
            select(bundles)
            .where(bundles.c.comparison_id == rid)
            .order_by(bundles.c.role, bundles.c.run)
        )
        return RunRecord(
            id=rid,
            type="compare",
            path=r["path"],
            workload=r["workload"],
            size=r["size"],
            time_unix=r["time_unix"],
            sides=f"{r['baseline_spec']} -> {r['target_spec']}",
            passed=bool(r["passed"]),
            exit_code=r["exit_code"],
            verdict=decode(Verdict, loads(r["verdict"])),
            bundles=tuple(
                BundleRow(
                    id=b["id"],
                    role=b["role"],
                    run=b["run"],
                    status=b["status"],
                    side_spec=b["side_spec"],
                    device_name=b["device_name"],
                    path=b["path"],
                    metrics=_metrics(store, b["id"]),
                )
                for b in members
            ),
        )
    r = store.read(select(bundles).where(bundles.c.id == rid))[0]
    return RunRecord(
        id=rid,
        type="run",
        path=r["path"],
        workload=r["workload"],
        size=r["size"],
        time_unix=r["finished_unix"] or r["started_unix"],
        sides=r["side_spec"],
        status=r["status"],
        reason=r["reason"],
        side_spec=r["side_spec"],
        device_name=r["device_name"],
        metrics=_metrics(store, rid),
    )


def _metrics(store: Reader, bundle_id: str) -> dict[str, float]:
    stmt = select(metrics.c.name, metrics.c.value).where(metrics.c.bundle_id == bundle_id)
    return {r["name"]: r["value"] for r in store.read(stmt.order_by(metrics.c.name))}


def metric_names(store: Reader) -> list[str]:
    names = {r["name"] for r in store.read(select(metrics.c.name).distinct())}
    return sorted(names | set(BUNDLE_METRICS) | set(COMPARISON_METRICS))


def trend(
    store: Reader,
    metric: str,
    *,
    workload: str | None = None,
    device: str | None = None,
    side: str | None = None,
) -> list[TrendPoint]:
    """A metric over time, oldest first: one point per comparison and side (the median
    over its ok repeats; compliance runs left out) or per stand-alone run."""
    if metric in COMPARISON_METRICS:
        return _comparison_trend(store, metric, workload, device)
    if metric not in metric_names(store):
        raise UsageError(f"unknown metric {metric!r}: use one of {', '.join(metric_names(store))}")
    b = bundles.c
    rows = store.read(
        select(
            *(b[n] for n in ("id", "comparison_id", "role", "run", "side_spec")),
            *(b[n] for n in ("device_type", "device_string", "device_name", "workload", "size")),
            b.started_unix,
            b.finished_unix,
            metrics.c.value,
            comparisons.c.time_unix.label("comparison_time"),
        )
        .select_from(
            metrics.join(bundles, b.id == metrics.c.bundle_id).outerjoin(
                comparisons, comparisons.c.id == b.comparison_id
            )
        )
        .where(metrics.c.name == metric, b.status == "ok")
    )
    groups: dict[tuple[str, str], list[RowMapping]] = {}
    for r in rows:
        if r["run"] in COMPLIANCE_RUNS and r["comparison_id"]:
            continue
        if not matches(r["workload"], workload):
            continue
        if device and not device_matches(r, "run", device):
            continue
        if side and r["side_spec"] != side and r["role"] != side:
            continue
        key = (r["comparison_id"] or r["id"], r["role"] or "")
        groups.setdefault(key, []).append(r)
    points = []
    for (run_id, role), members in groups.items():
        first = members[0]
        points.append(
            TrendPoint(
                id=run_id,
                time_unix=first["comparison_time"]
                or first["finished_unix"]
                or first["started_unix"],
                workload=first["workload"],
                size=first["size"],
                role=role or None,
                side=first["side_spec"],
                value=statistics.median(m["value"] for m in members),
                n=len(members),
            )
        )
    points.sort(key=lambda p: (p.time_unix or 0.0, p.role or ""))
    return points


def _comparisons(store: Reader, workload: str | None, device: str | None) -> list[RowMapping]:
    """The comparisons of ``workload`` with ``device`` on either side (None: any),
    oldest first."""
    return [
        r
        for r in store.read(select(comparisons).order_by(comparisons.c.time_unix))
        if matches(r["workload"], workload)
        and (
            not device
            or device_matches(r, "baseline", device)
            or device_matches(r, "target", device)
        )
    ]


def _comparison_trend(
    store: Reader, metric: str, workload: str | None, device: str | None
) -> list[TrendPoint]:
    points = []
    for r in _comparisons(store, workload, device):
        ratio = r["speed_ratio"]
        value = (1 / ratio if ratio else None) if metric == "speedup" else r[metric]
        if value is None:
            continue
        points.append(
            TrendPoint(
                id=r["id"],
                time_unix=r["time_unix"],
                workload=r["workload"],
                size=r["size"],
                role="target/baseline",
                side=f"{r['target_spec']} / {r['baseline_spec']}",
                value=float(value),
                n=1,
            )
        )
    return points
