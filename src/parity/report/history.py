"""The history index (``parity.store``) as tables: ``parity ls``, ``show`` and ``trend``.

The store hands back typed rows, records and trend points (``parity.model.history``);
this module turns them into view sections, which the terminal renderer fits to the
width it has.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import fields

from rich.console import Console

from parity.model.history import RunRecord, RunRow, TrendPoint
from parity.report import fmt
from parity.report.parts import ColumnKind, Part, Section, Sentence, table
from parity.report.screen import build_screen
from parity.report.terminal import print_lines, print_sections, screen_lines

SPARK = "▁▂▃▄▅▆▇█"
BYTES = ("host_peak_rss", "device_peak_allocated", "device_peak_reserved")


def when(unix: float | None) -> str:
    return "-" if not unix else time.strftime("%Y-%m-%d %H:%M", time.localtime(unix))


def fmt_metric(name: str, value: float | None) -> str:
    """A figure formatted by what its name says it is."""
    if value is None:
        return fmt.DASH
    if name.endswith("_per_s"):
        return fmt.per_second(value)
    if name.endswith("_s"):
        return fmt.seconds(value)
    if name in BYTES:
        return fmt.nbytes(value)
    if name == "mfu":
        return f"{value:.1%}"
    if name == "achieved_flops":
        return fmt.flops(value)
    return fmt.number(float(value))


def _figure(r: RunRow) -> str:
    if r.type in ("compare", "serve"):
        ratio = r.speed_ratio
        return "-" if ratio is None else f"ratio {fmt.ratio(ratio)} ({r.speed_verdict})"
    return f"median step {fmt.seconds(r.median_step_s)}"


def _what(r: RunRow) -> str:
    return f"{r.workload}" if r.size is None else f"{r.workload} ({r.size})"


#: below this width ``parity ls`` leaves the path out (``parity show ID`` has it)
PATHS_FROM = 120


def runs_section(rows: Sequence[RunRow], *, paths: bool = True) -> Section:
    """``parity ls``: comparisons and runs, newest first (``paths``: with where each is)."""
    columns: list[tuple[str, ColumnKind]] = [
        ("id", "text"),
        ("when", "text"),
        ("workload: sides", "text"),
        ("result", "result"),
        ("figure", "text"),
    ]
    cells: list[tuple[str, ...]] = [
        (r.id, when(r.time_unix), f"{_what(r)}: {r.sides}", str(r.result), _figure(r)) for r in rows
    ]
    legend = (
        "id: c... a comparison (result PASS or FAIL), s... a serving comparison (PASS, FAIL "
        "or INCONCLUSIVE), b... a single run (ok or failed); ratio: target/baseline step "
        "time, for s... target/baseline highest rate within the limits"
    )
    if paths:
        columns.append(("path", "path"))
        cells = [(*c, r.path) for c, r in zip(cells, rows, strict=True)]
    else:
        legend += "; where each is: parity show ID (or --wide)"
    made = table(columns, cells, legend=legend)
    parts: tuple[Part, ...] = (made,) if rows else (Sentence(text="no runs indexed yet"),)
    return Section(key="runs", title="parity history (newest first)", result="INFO", parts=parts)


def _short(value: str) -> str:
    """A digest shown by its first 12 digits, as ids are (``--json`` has it whole)."""
    if len(value) >= 32 and all(c in "0123456789abcdef" for c in value):
        return value[:12] + "…"
    return value


def record_sections(record: RunRecord) -> tuple[Section, ...]:
    """``parity show``: one comparison or run, its bundles and its figures."""
    skip = {"verdict", "serving", "bundles", "metrics", "type"}
    shown = [
        (f.name, when(value) if f.name.endswith("_unix") else _short(str(value)))
        for f in fields(record)
        if f.name not in skip and (value := getattr(record, f.name)) is not None
    ]
    parts: list[Part] = [table([("field", "text"), ("value", "text")], shown)]
    bundles = record.bundles
    if bundles:
        parts.append(
            table(
                [
                    ("id", "text"),
                    ("role", "text"),
                    ("run", "text"),
                    ("status", "text"),
                    ("side", "text"),
                    ("median step", "number"),
                    ("path", "path"),
                ],
                [
                    (
                        b.id,
                        str(b.role),
                        str(b.run),
                        b.status,
                        str(b.side_spec),
                        fmt.seconds(b.metrics.get("median_step_s")),
                        b.path,
                    )
                    for b in bundles
                ],
                title="Bundles",
            )
        )
    metrics = record.metrics
    if metrics:
        parts.append(
            table(
                [("figure", "text"), ("value", "number")],
                [(name, fmt_metric(name, value)) for name, value in metrics.items()],
                title="Figures",
            )
        )
    title = f"{record.type} {record.id}"
    return (Section(key="record", title=title, result="INFO", parts=tuple(parts)),)


def sparkline(values: Sequence[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo
    return "".join(
        SPARK[0 if span == 0 else round((v - lo) / span * (len(SPARK) - 1))] for v in values
    )


def trend_section(metric: str, points: Sequence[TrendPoint]) -> Section:
    """``parity trend``: a metric over time, oldest first, with a sparkline per side."""
    rows = [
        (
            when(p.time_unix),
            p.id,
            f"{p.workload} ({p.size})",
            str(p.role or "-"),
            str(p.side),
            fmt_metric(metric, p.value),
            str(p.n),
        )
        for p in points
    ]
    parts: list[Part] = [
        table(
            [
                ("when", "text"),
                ("id", "text"),
                ("workload", "text"),
                ("role", "text"),
                ("side", "text"),
                (metric, "number"),
                ("n", "number"),
            ],
            rows,
            legend="n: the repeats whose median is the point",
        )
    ]
    by_side: dict[str, list[float]] = {}
    for p in points:
        by_side.setdefault(f"{p.workload} {p.side}", []).append(p.value)
    for label, values in by_side.items():
        change = (values[-1] / values[0] - 1) if values[0] else None
        delta = "" if change is None or len(values) < 2 else f", last vs first {change:+.1%}"
        parts.append(
            Sentence(text=f"{label}: {sparkline(values)} ({len(values)} runs{delta})", tone="muted")
        )
    title = f"{metric} over time (oldest first)"
    return Section(key="trend", title=title, result="INFO", parts=tuple(parts))


def render_runs(rows: Sequence[RunRow], console: Console, *, wide: bool = False) -> None:
    paths = wide or console.width >= PATHS_FROM
    print_sections([runs_section(rows, paths=paths)], console, wide=wide)


def render_record(record: RunRecord, console: Console, *, wide: bool = False) -> None:
    """A comparison leads with its verdict's screen (the decision, the speed ratio with
    its interval and word, cost), then its record; a run with its record."""
    if record.verdict is not None:
        screen = build_screen(record.verdict, out=record.path)
        print_lines(screen_lines(screen, None if wide else console.width), console)
        console.print()
    if record.serving is not None:  # the verdict's lines as parity serve printed them
        from parity.report.serving import lines

        for line in lines(record.serving, {}, {})[:-1]:  # less the definitions
            console.print(line, markup=False, soft_wrap=True)
        console.print()
    print_sections(record_sections(record), console, wide=wide)


def render_trend(
    metric: str, points: Sequence[TrendPoint], console: Console, *, wide: bool = False
) -> None:
    print_sections([trend_section(metric, points)], console, wide=wide)
