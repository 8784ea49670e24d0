"""The history index (``parity.store``) as Rich tables: ``ls``, ``show`` and ``trend``."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from parity.report.terminal import fmt_bytes, fmt_s

SPARK = "▁▂▃▄▅▆▇█"


def when(unix: float | None) -> str:
    return "-" if not unix else time.strftime("%Y-%m-%d %H:%M", time.localtime(unix))


def fmt_metric(name: str, value: float | None) -> str:
    """A figure formatted by what its name says it is."""
    if value is None:
        return "-"
    if name.endswith("_per_s"):
        return f"{value:,.1f}/s"
    if name.endswith("_s"):
        return fmt_s(value)
    if name in ("host_peak_rss", "device_peak_allocated", "device_peak_reserved"):
        return fmt_bytes(int(value))
    if name == "mfu":
        return f"{value:.1%}"
    if name == "achieved_flops":
        return f"{value / 1e9:,.1f} GFLOP/s"
    return f"{value:.4g}"


def runs_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="parity history (newest first)", title_justify="left")
    for col in ("id", "when", "type", "workload", "sides", "result", "figure", "path"):
        table.add_column(col, overflow="fold", no_wrap=col in ("id", "when"))
    for r in rows:
        if r["type"] == "compare":
            ratio = r.get("speed_ratio")
            figure = "-" if ratio is None else f"ratio {ratio:.3f} ({r.get('speed_verdict')})"
        else:
            figure = f"median step {fmt_s(r.get('median_step_s'))}"
        result = str(r["result"])
        style = "green" if result in ("PASS", "ok") else "red"
        table.add_row(
            r["id"],
            when(r["time_unix"]),
            r["type"],
            f"{r['workload']} ({r['size']})",
            str(r["sides"]),
            Text(result, style=style),
            figure,
            r["path"],
        )
    return table


def show_renderable(record: dict[str, Any]) -> RenderableType:
    head = Table(show_header=False, title=f"{record['type']} {record['id']}", title_justify="left")
    skip = {"verdict", "bundles", "metrics", "type"}
    for key, value in record.items():
        if key in skip or value is None:
            continue
        text = when(value) if key.endswith("_unix") else str(value)
        head.add_row(key, text)
    parts: list[RenderableType] = [head]
    if record.get("bundles"):
        bundles = Table(title="bundles", title_justify="left")
        for col in ("id", "role", "run", "status", "side", "median step", "path"):
            bundles.add_column(col, overflow="fold")
        for b in record["bundles"]:
            bundles.add_row(
                b["id"],
                str(b["role"]),
                str(b["run"]),
                str(b["status"]),
                str(b["side_spec"]),
                fmt_s((b.get("metrics") or {}).get("median_step_s")),
                b["path"],
            )
        parts.append(bundles)
    if record.get("metrics"):
        figures = Table(title="figures", title_justify="left", show_header=False)
        for name, value in record["metrics"].items():
            figures.add_row(name, fmt_metric(name, value))
        parts.append(figures)
    return Group(*parts)


def sparkline(values: list[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo
    return "".join(
        SPARK[0 if span == 0 else round((v - lo) / span * (len(SPARK) - 1))] for v in values
    )


def trend_renderable(metric: str, points: list[dict[str, Any]]) -> RenderableType:
    table = Table(title=f"{metric} over time (oldest first)", title_justify="left")
    for col in ("when", "id", "workload", "role", "side", metric, "n"):
        table.add_column(col, overflow="fold")
    for p in points:
        table.add_row(
            when(p["time_unix"]),
            p["id"],
            f"{p['workload']} ({p['size']})",
            str(p["role"] or "-"),
            str(p["side"]),
            fmt_metric(metric, p["value"]),
            str(p["n"]),
        )
    lines: list[RenderableType] = [table]
    by_side: dict[str, list[float]] = {}
    for p in points:
        by_side.setdefault(f"{p['workload']} {p['side']}", []).append(p["value"])
    for label, values in by_side.items():
        change = (values[-1] / values[0] - 1) if values[0] else None
        delta = "" if change is None or len(values) < 2 else f", last vs first {change:+.1%}"
        lines.append(
            Text(f"{label}: {sparkline(values)}  ({len(values)} runs{delta})", style="dim")
        )
    return Group(*lines)
