"""The report's plots, drawn with matplotlib and inlined as SVG.

Each function takes what a report has (the verdict as a dict, and each side's bundles
where they could be loaded) and returns a ``Plot``, or None when there is nothing to
draw: a plot is never drawn empty. The SVG is made fit to sit inside an HTML page with
other plots: no XML prolog, DOCTYPE, metadata or comments, no namespace URLs (the HTML
parser puts ``<svg>`` in the SVG namespace by itself), and every ``id`` prefixed with
the plot's key so that two plots never share one. Each data series is drawn in a group
whose id holds ``series``, so a test can find and measure what was drawn.

matplotlib is the optional ``report`` extra; importing this module without it raises
ImportError, which ``parity.report.html`` turns into a one-line usage error.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from parity.bundle import Bundle, SideRuns

ROLES = ("baseline", "target")
COLORS = {"baseline": "#3b6fb6", "target": "#e07b39"}
EXTRA_COLORS = ("#5a9e5a", "#9467bd", "#8c564b", "#7f7f7f")
WIDTH_IN = 9.0
RC: Any = {  # rcParams; typed Any because matplotlib types keys as literals
    "svg.hashsalt": "parity",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}
MAX_LAYERS = 40


@dataclass(frozen=True)
class Plot:
    """One rendered plot: ``points`` counts the data values drawn."""

    key: str
    title: str
    svg: str
    points: int
    caption: str = ""


class _Canvas:
    """A figure plus a counter that gives each data series a unique group id."""

    def __init__(self, key: str, rows: int = 1, cols: int = 1, height: float = 3.2) -> None:
        self.key = key
        self.fig = Figure(figsize=(WIDTH_IN, height), layout="constrained")
        self.axes: list[Axes] = list(self.fig.subplots(rows, cols, squeeze=False).flat)
        self.points = 0
        self._series = 0

    def mark(self, artists: Iterable[Artist] | Artist, points: int) -> None:
        """Tag drawn artists as data and count their values."""
        items = [artists] if isinstance(artists, Artist) else list(artists)
        for artist in items:
            self._series += 1
            artist.set_gid(f"series-{self._series}")
        self.points += points

    def render(self, title: str, caption: str = "") -> Plot | None:
        if self.points == 0:
            return None
        return Plot(self.key, title, to_svg(self.fig, self.key), self.points, caption)


def to_svg(fig: Figure, prefix: str) -> str:
    """The figure as an inline SVG element with ids prefixed and nothing external."""
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = svg.replace("xlink:href=", "href=")
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', svg)
    return svg.strip()


def plain(text: Any) -> str:
    """Text for matplotlib from data: a dollar sign must not start mathtext."""
    return str(text).replace("$", r"\$")


def _finite(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if _is_number(v)]


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _spec(verdict: dict[str, Any], role: str) -> str:
    side = (verdict.get("sides") or {}).get(role) or {}
    return plain(f"{role} {side.get('spec', '?')}")


def _runs(side: SideRuns | None) -> list[tuple[str, Bundle]]:
    """A side's successful bundles, repeats first, then its compliance runs."""
    if side is None:
        return []
    named = [(b.path.name if b.path != side.path else "r00", b) for b in side.ok]
    named += [(name, b) for name, b in side.compliance.items() if b.ok]
    return named


# -- quality ---------------------------------------------------------------------------


def loss_plot(verdict: dict[str, Any], sides: dict[str, SideRuns | None]) -> Plot | None:
    """Loss curves of both sides overlaid, and their relative difference step by step."""
    with matplotlib.rc_context(RC):
        canvas = _Canvas("loss", rows=2, height=4.6)
        top, bottom = canvas.axes
        curves: dict[str, list[float | None]] = {}
        for role in ROLES:
            side = sides.get(role)
            for k, bundle in enumerate(side.ok if side else []):
                losses = bundle.numerics.get("losses") or []
                ys = [float(v) if _is_number(v) else math.nan for v in losses]
                if not _finite(ys):
                    continue
                if k == 0:
                    curves[role] = [v if _is_number(v) else None for v in losses]
                (line,) = top.plot(
                    range(1, len(ys) + 1),
                    ys,
                    color=COLORS[role],
                    alpha=1.0 if k == 0 else 0.35,
                    linewidth=(2.8 if role == "baseline" else 1.4) if k == 0 else 0.8,
                    linestyle="-" if role == "baseline" else "--",
                    label=_spec(verdict, role) if k == 0 else None,
                    zorder=2 if role == "baseline" else 3,
                )
                canvas.mark(line, len(_finite(ys)))
        if not curves:
            return None
        top.set_ylabel("loss")
        top.legend(loc="upper right")
        base, targ = curves.get("baseline") or [], curves.get("target") or []
        steps, rel = [], []
        for i, (x, y) in enumerate(zip(base, targ, strict=False), start=1):
            if x is not None and y is not None and x != 0:
                steps.append(i)
                rel.append(max(abs(y - x) / abs(x), 1e-12))
        if rel:
            (line,) = bottom.plot(steps, rel, color="#555555", marker=".", linewidth=1)
            canvas.mark(line, len(rel))
            bottom.set_yscale("log")
            bottom.set_ylabel("|target - baseline| / baseline")
            tolerances = (verdict.get("quality") or {}).get("tolerances") or {}
            tol = _dig_number(tolerances, ("final_loss_rel",))
            if tol is not None:
                bottom.axhline(tol, color="#c0392b", linestyle="--", linewidth=1)
                bottom.annotate(
                    f"final-loss tolerance {tol:g}",
                    (1, tol),
                    xycoords=("axes fraction", "data"),
                    ha="right",
                    va="bottom",
                    color="#c0392b",
                )
        else:
            bottom.set_visible(False)
        bottom.set_xlabel("step")
        return canvas.render(
            "Loss curves",
            "Each side's first repeat in full colour (the target dashed over the baseline), "
            "further repeats faint; below, the "
            "relative difference of the target's loss from the baseline's at each step.",
        )


# -- speed -----------------------------------------------------------------------------


def _steady(bundle: Bundle) -> tuple[list[float], int]:
    samples = _finite(bundle.metrics.get("step_samples_s") or [])
    start = bundle.metrics.get("steady_from_step", 1)
    return samples, int(start) if isinstance(start, int) else 1


def step_time_plot(verdict: dict[str, Any], sides: dict[str, SideRuns | None]) -> Plot | None:
    """Step times of every run, over the steps and as distributions of the steady state."""
    with matplotlib.rc_context(RC):
        canvas = _Canvas("step-times", cols=2, height=3.6)
        series, dist = canvas.axes
        boxes: list[list[float]] = []
        labels: list[str] = []
        colors: list[str] = []
        for role in ROLES:
            for name, bundle in _runs(sides.get(role)):
                samples, start = _steady(bundle)
                if not samples:
                    continue
                ms = [s * 1e3 for s in samples]
                faint = name in ("reseeded", "same-input")
                (line,) = series.plot(
                    range(1, len(ms) + 1),
                    ms,
                    color=COLORS[role],
                    alpha=0.3 if faint else 0.8,
                    linewidth=0.9,
                    linestyle=":" if faint else "-",
                )
                canvas.mark(line, len(ms))
                steady = ms[start:]
                if steady:
                    boxes.append(steady)
                    labels.append(f"{role[0].upper()} {name}")
                    colors.append(COLORS[role])
        if not boxes:
            return None
        series.set_yscale("log")
        series.set_xlabel("step (first step included)")
        series.set_ylabel("step time (ms)")
        for role in ROLES:
            series.plot([], [], color=COLORS[role], label=_spec(verdict, role))
        series.legend(loc="upper right")
        parts = dist.boxplot(
            boxes,
            tick_labels=labels,
            showfliers=False,
            patch_artist=True,
            medianprops={"color": "#222222", "linewidth": 1.5},
        )
        for patch, color in zip(parts["boxes"], colors, strict=True):
            patch.set_facecolor(color)
            patch.set_alpha(0.35)
        canvas.mark(parts["boxes"], 0)
        for i, (values, color) in enumerate(zip(boxes, colors, strict=True), start=1):
            xs = [i + 0.25 * (((k * 7919) % 100) / 100 - 0.5) for k in range(len(values))]
            dots = dist.scatter(xs, values, s=6, color=color, alpha=0.7, linewidths=0)
            canvas.mark(dots, len(values))
        dist.set_ylabel("steady-state step time (ms)")
        dist.tick_params(axis="x", labelrotation=45)
        return canvas.render(
            "Step times per side and repeat",
            "Left: every step of every run (log scale; compliance runs dotted). Right: the "
            "steady-state steps of each run (B baseline, T target), box from quartile to "
            "quartile with the median, each step a dot.",
        )


def speed_plot(verdict: dict[str, Any]) -> Plot | None:
    """The step-time ratio with its interval, and the compliance runs' ratios."""
    speed = verdict.get("speed") or {}
    ratio = _dig_number(speed, ("ratio",))
    interval = speed.get("interval") or {}
    if ratio is None:
        return None
    rows: list[tuple[str, float, float | None, float | None, str]] = [
        (
            "target / baseline",
            ratio,
            _dig_number(interval, ("low",)),
            _dig_number(interval, ("high",)),
            COLORS["target"],
        )
    ]
    for check in speed.get("compliance") or []:
        if _is_number(check.get("ratio")):
            color = "#5a9e5a" if check.get("passed") else "#c0392b"
            rows.append((plain(check.get("name")), float(check["ratio"]), None, None, color))
    with matplotlib.rc_context(RC):
        canvas = _Canvas("speed", height=1.1 + 0.45 * len(rows))
        ax = canvas.axes[0]
        for y, (_, value, low, high, color) in enumerate(reversed(rows)):
            if low is not None and high is not None:
                bar = ax.errorbar(
                    [value],
                    [y],
                    xerr=[[value - low], [high - value]],
                    fmt="o",
                    color=color,
                    capsize=5,
                    markersize=7,
                )
                canvas.mark(bar.lines[0], 1)
                canvas.mark(bar.lines[2], 2)
                ax.annotate(
                    f"{value:.3f} [{low:.3f}, {high:.3f}]",
                    (value, y),
                    xytext=(0, 8),
                    textcoords="offset points",
                    ha="center",
                )
            else:
                (dot,) = ax.plot([value], [y], "D", color=color, markersize=6)
                canvas.mark(dot, 1)
                ax.annotate(
                    f"{value:.3f}",
                    (value, y),
                    xytext=(0, 8),
                    textcoords="offset points",
                    ha="center",
                )
        ax.axvline(1.0, color="#333333", linewidth=1)
        ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)])
        ax.set_ylim(-0.6, len(rows) - 0.3)
        ax.set_xlabel("step-time ratio (below 1: faster)")
        confidence = interval.get("confidence")
        level = f"{confidence:.0%} " if _is_number(confidence) else ""
        return canvas.render(
            "Speed ratio",
            f"Median steady-state step time of the target over the baseline's, with its "
            f"{level}interval; compliance runs as the ratio of their median to the target's.",
        )


def latency_plot(verdict: dict[str, Any]) -> Plot | None:
    """p50/p90/p99 of each latency figure (TTFT, TPOT, ITL, end to end or step latency)."""
    sides = verdict.get("sides") or {}
    metrics: list[tuple[str, str, str]] = [
        ("generation", "ttft_s", "TTFT"),
        ("generation", "tpot_s", "TPOT"),
        ("generation", "itl_s", "ITL"),
        ("generation", "e2e_s", "end to end"),
        ("inference", "latency_s", "latency"),
    ]
    present = [
        m
        for m in metrics
        if any(isinstance(((sides.get(r) or {}).get(m[0]) or {}).get(m[1]), dict) for r in ROLES)
    ]
    if not present:
        return None
    quantiles = ("p50", "p90", "p99")
    with matplotlib.rc_context(RC):
        canvas = _Canvas("latency", cols=len(present), height=3.0)
        for ax, (section, key, label) in zip(canvas.axes, present, strict=True):
            width = 0.38
            for j, role in enumerate(ROLES):
                pct = ((sides.get(role) or {}).get(section) or {}).get(key) or {}
                xs = [i + (j - 0.5) * width for i in range(len(quantiles))]
                ys = [float(pct[q]) * 1e3 if _is_number(pct.get(q)) else 0.0 for q in quantiles]
                bars = ax.bar(xs, ys, width, color=COLORS[role], label=_spec(verdict, role))
                canvas.mark(bars.patches, sum(_is_number(pct.get(q)) for q in quantiles))
            ax.set_xticks(range(len(quantiles)), list(quantiles))
            ax.set_title(label)
            ax.set_ylabel("ms")
        canvas.fig.legend(
            *canvas.axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2
        )
        return canvas.render(
            "Latency percentiles",
            "p50, p90 and p99 over the steady-state steps of each side's first repeat.",
        )


# -- memory, phases --------------------------------------------------------------------


def memory_plot(verdict: dict[str, Any]) -> Plot | None:
    """Peak memory of each phase: host RSS and device allocated/reserved, in MiB."""
    memory = verdict.get("memory") or {}
    items: list[tuple[str, dict[str, float | None]]] = []
    phases = sorted({p for r in ROLES for p in (memory.get(r) or {})}, key=_phase_order)
    for phase in phases:
        for label, path in (
            ("host peak RSS", ("host_peak_rss",)),
            ("device allocated", ("device", "allocated")),
            ("device reserved", ("device", "reserved")),
        ):
            values = {r: _dig_number((memory.get(r) or {}).get(phase), path) for r in ROLES}
            if any(v is not None for v in values.values()):
                items.append((f"{phase}: {label}", values))
    if not items:
        return None
    with matplotlib.rc_context(RC):
        canvas = _Canvas("memory", height=1.0 + 0.42 * len(items))
        ax = canvas.axes[0]
        height = 0.38
        for j, role in enumerate(ROLES):
            ys = [len(items) - 1 - i + (0.5 - j) * height for i in range(len(items))]
            xs = [(v[role] or 0.0) / 2**20 for _, v in items]
            bars = ax.barh(ys, xs, height, color=COLORS[role], label=_spec(verdict, role))
            canvas.mark(bars.patches, sum(v[role] is not None for _, v in items))
        ax.set_yticks(range(len(items)), [name for name, _ in reversed(items)])
        ax.set_xlabel("MiB")
        canvas.fig.legend(loc="outside lower center", ncol=2)
        return canvas.render(
            "Memory by phase",
            "Peaks read after a synchronize, per phase of each side's first repeat; "
            "device figures are absent where the device reports none (the CPU).",
        )


def _phase_order(name: str) -> tuple[int, str]:
    order = ("load", "first_step", "steps", "generation")
    return (order.index(name) if name in order else len(order), name)


def _dig_number(node: Any, path: Sequence[str]) -> float | None:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return float(node) if _is_number(node) else None


PHASES = (
    ("start_import_s", "start + import"),
    ("load_s", "load + move"),
    ("first_step_s", "first step"),
    ("warmup_s", "warm-up"),
    ("steady_s", "steady state"),
)


def phases_plot(verdict: dict[str, Any]) -> Plot | None:
    """Where each side's wall time went, phase by phase, as stacked bars."""
    phases = verdict.get("phases") or {}
    if not any(isinstance(phases.get(r), dict) for r in ROLES):
        return None
    with matplotlib.rc_context(RC):
        canvas = _Canvas("phases", height=2.2)
        ax = canvas.axes[0]
        left = [0.0, 0.0]
        palette = ("#9aa9bd", "#7fb3a6", "#e6b85c", "#d98c8c", "#6f8fbf")
        for (key, label), color in zip(PHASES, palette, strict=True):
            widths = [_dig_number(phases.get(r), (key,)) for r in reversed(ROLES)]
            xs = [w or 0.0 for w in widths]
            bars = ax.barh([0, 1], xs, left=left, color=color, label=label, height=0.55)
            canvas.mark(bars.patches, sum(w is not None for w in widths))
            left = [a + b for a, b in zip(left, xs, strict=True)]
        ax.set_yticks([0, 1], [_spec(verdict, r) for r in reversed(ROLES)])
        ax.set_xlabel("seconds")
        canvas.fig.legend(loc="outside lower center", ncol=len(PHASES))
        return canvas.render(
            "Phases",
            "Process start and import, load and move to the device, first step (compile, "
            "graph capture), warm-up until steady, steady state: each side's first repeat.",
        )


# -- later sections: per-layer error, cost ---------------------------------------------

NAME_KEYS = ("module", "layer", "name", "op")


def layer_table(numerics: Any) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """Find a per-layer table in the verdict's numerics section: its rows, the error
    columns worth plotting, and the first diverging module where the section names it.

    A table is a list of objects named by ``module`` (or ``layer``, ``name``, ``op``) with
    numeric error columns (``*err*``, ``*rmse*``; an input's error is left out); tables
    named by module or layer win over others, then the longest.
    """
    best: tuple[tuple[int, int], list[dict[str, Any]], list[str]] = ((-1, 0), [], [])
    first: str | None = None
    stack: list[Any] = [numerics]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if "first" in key and "diverg" in key and value is not None:
                    first = _row_name(value) if isinstance(value, dict) else str(value)
                stack.append(value)
        elif isinstance(node, list) and node and all(isinstance(r, dict) for r in node):
            names = [_row_key(r) for r in node]
            if None in names:
                stack.extend(node)
                continue
            columns = [
                k
                for k in node[0]
                if ("err" in k.lower() or "rmse" in k.lower())
                and "input" not in k.lower()
                and any(_is_number(r.get(k)) for r in node)
            ]
            score = (2 - min(NAME_KEYS.index(n) for n in names if n), len(node))
            if columns and score > best[0]:
                best = (score, node, columns[:3])
    return best[1], best[2], first


def _row_key(row: dict[str, Any]) -> str | None:
    return next((k for k in NAME_KEYS if isinstance(row.get(k), str)), None)


def _row_name(row: dict[str, Any]) -> str | None:
    for key in NAME_KEYS:
        if isinstance(row.get(key), str):
            return str(row[key])
    return None


def layer_error_plot(verdict: dict[str, Any]) -> Plot | None:
    """Error per module in execution order (log scale), the first divergence marked."""
    rows, columns, first = layer_table(verdict.get("numerics"))
    if not rows:
        return None
    shown = rows[:MAX_LAYERS]
    names = [plain(_row_name(r) or "?") for r in shown]
    with matplotlib.rc_context(RC):
        canvas = _Canvas("layers", height=1.2 + 0.22 * len(shown))
        ax = canvas.axes[0]
        height = 0.8 / len(columns)
        colors = [_column_color(c, i) for i, c in enumerate(columns)]
        for j, (column, color) in enumerate(zip(columns, colors, strict=True)):
            ys = [
                len(shown) - 1 - i + (len(columns) / 2 - j - 0.5) * height
                for i in range(len(shown))
            ]
            xs = [float(r[column]) if _is_number(r.get(column)) else 0.0 for r in shown]
            bars = ax.barh(
                ys,
                [max(x, 1e-300) if x > 0 else 0 for x in xs],
                height,
                color=color,
                label=plain(column),
            )
            canvas.mark(bars.patches, sum(_is_number(r.get(column)) for r in shown))
        ax.set_yticks(range(len(shown)), list(reversed(names)))
        if any(float(r[c]) > 0 for r in shown for c in columns if _is_number(r.get(c))):
            ax.set_xscale("log")
        if first is not None and plain(first) in names:
            tick = ax.get_yticklabels()[len(shown) - 1 - names.index(plain(first))]
            tick.set_color("#c0392b")
            tick.set_fontweight("bold")
        canvas.fig.legend(loc="outside lower center", ncol=len(columns))
        more = f" (first {MAX_LAYERS} of {len(rows)} modules)" if len(rows) > MAX_LAYERS else ""
        mark = f"; the first diverging module, {first}, in red" if first else ""
        return canvas.render(
            "Error per layer",
            f"Each module's error in execution order{more}{mark}.",
        )


def _column_color(column: str, index: int) -> str:
    for role in ROLES:
        if role in column.lower():
            return COLORS[role]
    return EXTRA_COLORS[index % len(EXTRA_COLORS)]


def cost_items(cost: Any) -> list[tuple[str, dict[str, float | None]]]:
    """Numeric figures that the cost section gives for both sides, by dotted key."""
    if not isinstance(cost, dict):
        return []
    flat = {r: _flatten(cost.get(r)) for r in ROLES}
    if not any(flat.values()):
        for value in cost.values():
            if isinstance(value, dict) and any(isinstance(value.get(r), dict) for r in ROLES):
                flat = {r: _flatten(value.get(r)) for r in ROLES}
                break
    keys = [k for k in flat["baseline"] if k in flat["target"]]
    keys += [k for k in flat["target"] if k not in flat["baseline"]]
    # money first (usd_per_*), then other figures, then the price inputs themselves
    keys.sort(key=lambda k: (k.startswith(("price", "inputs")), "usd" not in k.lower()))
    return [(k, {r: flat[r].get(k) for r in ROLES}) for k in keys][:8]


def _flatten(node: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
    elif _is_number(node):
        out[prefix.rstrip(".")] = float(node)
    return out


def cost_plot(verdict: dict[str, Any]) -> Plot | None:
    """Each cost figure of both sides, one small panel per figure (units differ)."""
    items = cost_items(verdict.get("cost"))
    if not items:
        return None
    cols = min(4, len(items))
    rows = math.ceil(len(items) / cols)
    with matplotlib.rc_context(RC):
        canvas = _Canvas("cost", rows=rows, cols=cols, height=1.9 * rows + 0.4)
        for ax, (key, values) in zip(canvas.axes, items, strict=False):
            xs = [v if v is not None else 0.0 for v in values.values()]
            bars = ax.bar([0, 1], xs, color=[COLORS[r] for r in ROLES], width=0.6)
            canvas.mark(bars.patches, sum(v is not None for v in values.values()))
            ax.set_xticks([0, 1], ["baseline", "target"])
            ax.set_title(plain(key.replace("_", " ")), fontsize=8)
        for ax in canvas.axes[len(items) :]:
            ax.set_visible(False)
        return canvas.render(
            "Cost breakdown", "Each figure of the verdict's cost section, baseline and target."
        )


def all_plots(
    verdict: dict[str, Any],
    sides: dict[str, SideRuns | None],
    problems: list[str] | None = None,
) -> dict[str, Plot]:
    """Every plot the verdict and bundles have data for, by key. A plot that fails on
    malformed data is left out and named in ``problems``; it never stops the others."""
    makers: list[tuple[str, Callable[[], Plot | None]]] = [
        ("loss", lambda: loss_plot(verdict, sides)),
        ("step-times", lambda: step_time_plot(verdict, sides)),
        ("speed", lambda: speed_plot(verdict)),
        ("latency", lambda: latency_plot(verdict)),
        ("memory", lambda: memory_plot(verdict)),
        ("phases", lambda: phases_plot(verdict)),
        ("layers", lambda: layer_error_plot(verdict)),
        ("cost", lambda: cost_plot(verdict)),
    ]
    made: dict[str, Plot] = {}
    for key, make in makers:
        try:
            plot = make()
        except Exception as exc:  # malformed data costs one plot, not the report
            if problems is not None:
                problems.append(f"the {key} plot was left out ({type(exc).__name__}: {exc})")
            continue
        if plot is not None:
            made[key] = plot
    return made
