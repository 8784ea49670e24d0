"""The report's plots, drawn with matplotlib and inlined as SVG.

Each function takes what a report has (the typed verdict, and each side's bundles where
they could be loaded) and returns a ``Plot``, or None when there is nothing to draw: a
plot is never drawn empty. Plots draw the verdict's figures and the bundles' raw samples;
they compute nothing the report states in words (``parity.report.svg`` inlines them).

matplotlib is the optional ``report`` extra; importing this module without it raises
ImportError, which ``parity.report.html`` turns into a one-line usage error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import matplotlib
from matplotlib.axes import Axes

from parity.bundle import Bundle, SideRuns
from parity.model.metrics import MemoryPhase, Percentiles
from parity.model.verdict import ROLES, Role, Verdict
from parity.report import words
from parity.report.figures import LATENCY, MEMORY, pooled_over
from parity.report.quality import shown_layers
from parity.report.svg import COLORS, RC, Canvas, Plot, log_scale, plain
from parity.report.view import Sides

MAX_LAYERS = 40


def _finite(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _spec(verdict: Verdict, role: Role) -> str:
    return plain(f"{role} {verdict.sides.of(role).side}")


def _side(sides: Sides | None, role: Role) -> SideRuns | None:
    return None if sides is None else sides.of(role)


def _runs(side: SideRuns | None) -> list[tuple[str, Bundle]]:
    """A side's successful bundles, repeats first, then its compliance runs."""
    if side is None:
        return []
    named = [(b.path.name if b.path != side.path else "r00", b) for b in side.ok]
    named += [(name, b) for name, b in side.compliance.items() if b.ok]
    return named


# -- quality ---------------------------------------------------------------------------


def loss_plot(verdict: Verdict, sides: Sides | None) -> Plot | None:
    """Loss curves of both sides overlaid, and their relative difference step by step."""
    with matplotlib.rc_context(RC):
        canvas = Canvas("loss", rows=2, height=4.6)
        top, bottom = canvas.axes
        curves: dict[Role, tuple[float | None, ...]] = {}
        for role in ROLES:
            side = _side(sides, role)
            for k, bundle in enumerate(side.ok if side else ()):
                ys = [math.nan if v is None else v for v in bundle.losses]
                if not _finite(bundle.losses):
                    continue
                if k == 0:
                    curves[role] = bundle.losses
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
                canvas.mark(line, len(_finite(bundle.losses)))
        if not curves:
            return None
        top.set_ylabel("loss")
        top.legend(loc="upper right")
        _loss_difference(verdict, canvas, bottom, curves)
        return canvas.render(
            "Loss curves",
            "Each side's first repeat in full colour (the target dashed over the baseline), "
            "further repeats faint; below, the relative difference of the target's loss from "
            "the baseline's at each step.",
        )


def _loss_difference(
    verdict: Verdict, canvas: Canvas, ax: Axes, curves: dict[Role, tuple[float | None, ...]]
) -> None:
    base, targ = curves.get("baseline", ()), curves.get("target", ())
    steps, rel = [], []
    for i, (x, y) in enumerate(zip(base, targ, strict=False), start=1):
        if x is not None and y is not None and x != 0:
            steps.append(i)
            rel.append(max(abs(y - x) / abs(x), 1e-12))
    ax.set_xlabel("step")
    if not rel:
        ax.set_visible(False)
        return
    (line,) = ax.plot(steps, rel, color="#555555", marker=".", linewidth=1)
    canvas.mark(line, len(rel))
    log_scale(ax)
    ax.set_ylabel("|target - baseline| / baseline")
    tol = verdict.quality.tolerances.get("final_loss_rel") if verdict.quality else None
    if tol is not None:
        ax.axhline(tol, color="#c0392b", linestyle="--", linewidth=1)
        ax.annotate(
            f"final-loss tolerance {tol:g}",
            (1, tol),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            color="#c0392b",
        )


# -- speed -----------------------------------------------------------------------------


def step_time_plot(verdict: Verdict, sides: Sides | None) -> Plot | None:
    """Step times of every run, over the steps and as distributions of the steady state."""
    with matplotlib.rc_context(RC):
        canvas = Canvas("step-times", cols=2, height=3.6)
        series, dist = canvas.axes
        boxes: list[list[float]] = []
        labels: list[str] = []
        colors: list[str] = []
        for role in ROLES:
            for name, bundle in _runs(_side(sides, role)):
                metrics = bundle.metrics
                if metrics is None or not metrics.step_samples_s:
                    continue
                ms = [s * 1e3 for s in metrics.step_samples_s]
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
                steady = ms[metrics.steady_from_step :]
                if steady:
                    boxes.append(steady)
                    labels.append(f"{role[0].upper()} {name}")
                    colors.append(COLORS[role])
        if not boxes:
            return None
        log_scale(series)
        series.set_xlabel("step (first step included)")
        series.set_ylabel("step time (ms)")
        for role in ROLES:
            series.plot([], [], color=COLORS[role], label=_spec(verdict, role))
        series.legend(loc="upper right")
        _distributions(canvas, dist, boxes, labels, colors)
        return canvas.render(
            "Step times per side and repeat",
            "Left: every step of every run (log scale; compliance runs dotted). Right: the "
            "steady-state steps of each run (B baseline, T target), box from quartile to "
            "quartile with the median, each step a dot.",
        )


def _distributions(
    canvas: Canvas, ax: Axes, boxes: list[list[float]], labels: list[str], colors: list[str]
) -> None:
    parts = ax.boxplot(
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
        dots = ax.scatter(xs, values, s=6, color=color, alpha=0.7, linewidths=0)
        canvas.mark(dots, len(values))
    ax.set_ylabel("steady-state step time (ms)")
    ax.tick_params(axis="x", labelrotation=45)


def speed_plot(verdict: Verdict) -> Plot | None:
    """The step-time ratio with its interval, and the compliance runs' ratios."""
    speed = verdict.speed
    if speed is None:
        return None
    ci = speed.interval
    rows: list[tuple[str, float, tuple[float, float] | None, str]] = [
        ("target / baseline", speed.ratio, (ci.low, ci.high), COLORS["target"])
    ]
    two = speed.steadiness.placements if speed.steadiness is not None else None
    names = ("the others", "threads stalled") if two and two.stalled else ("quicker", "slower")
    for which, place in zip(names, (two.quicker, two.slower), strict=True) if two else ():
        if place.ratio is not None and place.low is not None and place.high is not None:
            name = f"{which} ({place.handoff_ns / 1e3:.1f} µs, {place.processes})"
            rows.append((name, place.ratio, (place.low, place.high), "#8e7cc3"))
    for check in speed.checks():
        if check.ratio is not None:
            color = "#5a9e5a" if check.passed else "#c0392b"
            rows.append((plain(words.check(check.name)), check.ratio, None, color))
    with matplotlib.rc_context(RC):
        canvas = Canvas("speed", height=1.1 + 0.45 * len(rows))
        ax = canvas.axes[0]
        for y, (_, value, interval, color) in enumerate(reversed(rows)):
            if interval is not None:
                low, high = interval
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
                label = f"{value:.3f} [{low:.3f}, {high:.3f}]"
            else:
                (dot,) = ax.plot([value], [y], "D", color=color, markersize=6)
                canvas.mark(dot, 1)
                label = f"{value:.3f}"
            ax.annotate(label, (value, y), xytext=(0, 8), textcoords="offset points", ha="center")
        ax.axvline(1.0, color="#333333", linewidth=1)
        ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)])
        ax.set_ylim(-0.6, len(rows) - 0.3)
        ax.set_xlabel("step-time ratio (below 1: faster)")
        return canvas.render(
            "Speed ratio",
            f"Median steady-state step time of the target over the baseline's, with its "
            f"{ci.confidence:.0%} interval"
            + (
                "; where the host placed the threads two ways, the ratio over each "
                "placement's processes (its thread handoff time and processes)"
                if two
                else ""
            )
            + "; compliance runs as the ratio of their median to the target's.",
        )


def _latency(verdict: Verdict, role: Role, key: str) -> Percentiles | None:
    info = verdict.sides.of(role)
    section = info.generation or info.inference
    value = getattr(section, key, None) if section is not None else None
    return value if isinstance(value, Percentiles) else None


def latency_plot(verdict: Verdict) -> Plot | None:
    """p50/p90/p99 of each latency figure (TTFT, TPOT, ITL, end to end or step latency)."""
    present = [
        (key, label)
        for key, label, _ in LATENCY
        if key.endswith("_s") and key != "output_tokens_per_s"
        if any(_latency(verdict, r, key) is not None for r in ROLES)
    ]
    if not present:
        return None
    quantiles = ("p50", "p90", "p99")
    with matplotlib.rc_context(RC):
        canvas = Canvas("latency", cols=len(present), height=3.0)
        for ax, (key, label) in zip(canvas.axes, present, strict=True):
            width = 0.38
            for j, role in enumerate(ROLES):
                pct = _latency(verdict, role, key)
                values = [None if pct is None else getattr(pct, q) for q in quantiles]
                xs = [i + (j - 0.5) * width for i in range(len(quantiles))]
                ys = [0.0 if v is None else v * 1e3 for v in values]
                bars = ax.bar(xs, ys, width, color=COLORS[role], label=_spec(verdict, role))
                canvas.mark(bars.patches, len(_finite(values)))
            ax.set_xticks(range(len(quantiles)), list(quantiles))
            ax.set_title(label)
            ax.set_ylabel("ms")
        canvas.fig.legend(
            *canvas.axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2
        )
        return canvas.render(
            "Latency percentiles",
            f"p50, p90 and p99 over {pooled_over(verdict.sides)}.",
        )


# -- memory, phases --------------------------------------------------------------------


def memory_plot(verdict: Verdict) -> Plot | None:
    """Peak memory of each phase: host RSS and device allocated/reserved, in MiB."""
    memory = verdict.memory
    if memory is None:
        return None
    items: list[tuple[str, list[float | None]]] = []
    for phase in ("load", "first_step", "steps"):
        found: list[MemoryPhase | None] = [getattr(memory.of(r), phase) for r in ROLES]
        for label, get in MEMORY:
            values = [None if m is None else get(m) for m in found]
            if any(v is not None for v in values):
                items.append((f"{phase.replace('_', ' ')}: {label}", [_float(v) for v in values]))
    if not items:
        return None
    with matplotlib.rc_context(RC):
        canvas = Canvas("memory", height=1.0 + 0.42 * len(items))
        ax = canvas.axes[0]
        height = 0.38
        for j, role in enumerate(ROLES):
            ys = [len(items) - 1 - i + (0.5 - j) * height for i in range(len(items))]
            xs = [(v[j] or 0.0) / 2**20 for _, v in items]
            bars = ax.barh(ys, xs, height, color=COLORS[role], label=_spec(verdict, role))
            canvas.mark(bars.patches, sum(v[j] is not None for _, v in items))
        ax.set_yticks(range(len(items)), [name for name, _ in reversed(items)])
        ax.set_xlabel("MiB")
        canvas.fig.legend(loc="outside lower center", ncol=2)
        return canvas.render(
            "Memory by phase",
            "Peaks read after a synchronize, per phase of each side's first repeat; "
            "device figures are absent where the device reports none (the CPU).",
        )


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


PHASES = (
    ("start_import_s", "start + import"),
    ("load_s", "load + move"),
    ("first_step_s", "first step"),
    ("warmup_s", "warm-up"),
    ("steady_s", "steady state"),
)


def phases_plot(verdict: Verdict) -> Plot | None:
    """Where each side's wall time went, phase by phase, as stacked bars."""
    phases = verdict.phases
    if phases is None:
        return None
    with matplotlib.rc_context(RC):
        canvas = Canvas("phases", height=2.2)
        ax = canvas.axes[0]
        left = [0.0, 0.0]
        palette = ("#9aa9bd", "#7fb3a6", "#e6b85c", "#d98c8c", "#6f8fbf")
        order: tuple[Role, Role] = ("target", "baseline")
        for (key, label), color in zip(PHASES, palette, strict=True):
            widths: list[float | None] = [getattr(phases.of(r), key) for r in order]
            xs = [w or 0.0 for w in widths]
            bars = ax.barh([0, 1], xs, left=left, color=color, label=label, height=0.55)
            canvas.mark(bars.patches, len(_finite(widths)))
            left = [a + b for a, b in zip(left, xs, strict=True)]
        ax.set_yticks([0, 1], [_spec(verdict, r) for r in order])
        ax.set_xlabel("seconds")
        canvas.fig.legend(loc="outside lower center", ncol=len(PHASES))
        return canvas.render(
            "Phases",
            "Process start and import, load and move to the device, first step (compile, "
            "graph capture), warm-up until steady, steady state: each side's first repeat.",
        )


# -- numerics, cost --------------------------------------------------------------------


def layer_error_plot(verdict: Verdict) -> Plot | None:
    """Error per module in execution order (log scale), the first divergence marked."""
    loc = verdict.numerics.layers if verdict.numerics is not None else None
    if loc is None or not loc.table:
        return None
    shown, total = shown_layers(loc, MAX_LAYERS)
    if not shown:
        return None
    order = {r.module: i for i, r in enumerate(loc.table)}
    shown = sorted(shown, key=lambda r: order[r.module])  # the plot: in execution order
    names = [plain(r.module) for r in shown]
    columns = [("baseline", "baseline_error"), ("target", "target_error")]
    if any(r.expected_error is not None for r in shown):
        columns.insert(1, ("expected", "expected_error"))
    with matplotlib.rc_context(RC):
        canvas = Canvas("layers", height=1.2 + 0.22 * len(shown))
        ax = canvas.axes[0]
        height = 0.8 / len(columns)
        for j, (role, attr) in enumerate(columns):
            offset = (len(columns) - 1) / 2 - j
            ys = [len(shown) - 1 - i + offset * height for i in range(len(shown))]
            # a value that is not finite (None) has no bar: the table says "not finite"
            xs = [max(getattr(r, attr) or 0.0, 1e-300) for r in shown]
            bars = ax.barh(ys, xs, height, color=COLORS[role], label=f"{role} error")
            canvas.mark(bars.patches, len(shown))
        ax.set_yticks(range(len(shown)), list(reversed(names)))
        if any((getattr(r, attr) or 0.0) > 0 for r in shown for _, attr in columns):
            log_scale(ax, "x")
        first = loc.first_divergence
        if first is not None and plain(first) in names:
            tick = ax.get_yticklabels()[len(shown) - 1 - names.index(plain(first))]
            tick.set_color("#c0392b")
            tick.set_fontweight("bold")
        canvas.fig.legend(loc="outside lower center", ncol=len(columns))
        more = f" ({len(shown)} of {total} leaf modules)" if len(shown) < total else ""
        mark = f"; the first diverging module, {first}, in red" if first else ""
        return canvas.render(
            "Error per module against fp64",
            f"Each module's relative error in execution order{more}, with the error the "
            f"target's precision alone makes there (expected){mark}.",
        )


def cost_plot(verdict: Verdict) -> Plot | None:
    """The cost per unit and per accelerator-hour of both sides, one panel each."""
    cost = verdict.cost
    if cost is None or not cost.available:
        return None
    a, b = cost.baseline, cost.target
    items = [
        (f"cost per {cost.unit or 'unit'} ($)", a.unit_cost, b.unit_cost),
        ("per accelerator-hour ($)", a.usd_per_accelerator_hour, b.usd_per_accelerator_hour),
    ]
    items = [i for i in items if i[1] is not None or i[2] is not None]
    if not items:
        return None
    with matplotlib.rc_context(RC):
        canvas = Canvas("cost", cols=len(items), height=2.4)
        for ax, (label, x, y) in zip(canvas.axes, items, strict=True):
            bars = ax.bar([0, 1], [x or 0.0, y or 0.0], color=list(COLORS.values()), width=0.6)
            canvas.mark(bars.patches, len(_finite([x, y])))
            ax.set_xticks([0, 1], list(ROLES))
            ax.set_title(plain(label), fontsize=9)
        return canvas.render("Cost", "The cost section's figures for the baseline and the target.")


def all_plots(
    verdict: Verdict, sides: Sides | None, problems: list[str] | None = None
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
