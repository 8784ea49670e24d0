"""The view's measured sections: speed (with latency percentiles and the compliance
runs), memory, phases and cost."""

from __future__ import annotations

import math
from collections.abc import Callable

from parity.model.metrics import Generation, Inference, MemoryPhase, Percentiles, Phases
from parity.model.side import Stop
from parity.model.verdict import ByRole, Cost, Interval, SideCost, SideInfo, Speed, Verdict
from parity.report import fair, fmt, words
from parity.report.parts import ColumnKind, Part, Row, Section, Sentence, Table, table

LATENCY: tuple[tuple[str, str, Callable[[float | None], str]], ...] = (
    ("ttft_s", "TTFT", fmt.seconds),
    ("tpot_s", "TPOT", fmt.seconds),
    ("itl_s", "ITL", fmt.seconds),
    ("e2e_s", "end to end", fmt.seconds),
    ("output_tokens_per_s", "output tokens/s", fmt.per_second),
    ("latency_s", "latency", fmt.seconds),
)


def speed(v: Verdict) -> Section:
    """The ratio with its interval, or why there is none; latency and compliance runs."""
    s = v.speed
    if s is None:
        why = words.says(v.withheld) if v.withheld is not None else None
        if why is None:
            failed = [role for role, info in v.sides.items() if info.status != "ok"]
            why = (
                f"no speed or cost verdict: the {' and the '.join(failed)} did not run to the end"
                if failed
                else "no speed or cost verdict: a side gave no steady-state samples"
            )
        parts: list[Part] = [Sentence(text=why, tone="bad", brief=True)]
        return Section(key="speed", title="Speed", result="WITHHELD", parts=tuple(parts))
    parts = _ratio(s)
    parts[1:1] = fair.tuning_label(v)  # said beside the ratio, wherever it is shown
    if s.checks():
        parts.append(
            table(
                [("check", "text"), ("result", "result"), ("ratio", "number"), ("detail", "text")],
                [
                    Row(
                        cells=(
                            words.check(c.name),
                            fmt.result_of(c.passed),
                            fmt.ratio(c.ratio),
                            words.says(c.finding),
                        ),
                        highlight=not c.passed,
                    )
                    for c in s.checks()
                ],
                title="Checks on the speed claim",
                legend="ratio: a compliance run's median step over the target's",
            )
        )
    parts += latency(v.sides)
    return Section(
        key="speed",
        title="Speed",
        result="INFO",
        parts=tuple(parts),
        plots=("speed", "step-times", "latency"),
    )


def _paired(ci: Interval) -> str:
    """What pairing the rounds did: the spread of each round's log ratio against that of
    the ratio of two independent processes (``sqrt(s_b^2 + s_t^2)``), and how much the
    rounds' autocorrelation widened it."""
    if ci.rounds_spread is None or ci.spread is None:
        return ""
    sides = [x for x in (ci.spread.baseline, ci.spread.target) if x is not None]
    apart = ""
    if len(sides) == 2:
        each = " and ".join(f"{x:.3f}" for x in sides)
        apart = (
            f" against {math.hypot(*sides):.3f} for two independent processes' (the sides' {each})"
        )
    r = ci.rounds_autocorrelation or 0.0
    wander = (
        f"; neighbouring rounds' ratios correlate {r:.2f}, which widens it as if "
        f"{(1 - r) / (1 + r):.0%} as many rounds had run"
        if r > 0
        else ""
    )
    return f" (the rounds' log ratios spread {ci.rounds_spread:.3f}{apart}{wander})"


def _ratio(s: Speed) -> list[Part]:
    ci = s.interval
    parts: list[Part] = [
        Sentence(
            text=f"target/baseline step time {fmt.ratio(s.ratio)} [{fmt.ratio(ci.low)}, "
            f"{fmt.ratio(ci.high)}] ({ci.confidence:.0%} interval), speedup "
            f"{fmt.times(s.speedup)}: {s.verdict}{_bounds(s)}",
            tone="strong",
            brief=True,
        ),
        Sentence(
            text=f"the ratio of the pooled median steps over {s.repeats.baseline} baseline and "
            f"{s.repeats.target} target repeats; interval: {ci.method}{_paired(ci)}",
            tone="muted",
        ),
    ]
    parts.extend(_timing(s))
    if s.stop is not None:
        parts.append(Sentence(text=f"measuring ended: {s.stop.message}", tone="muted"))
        parts.extend(Sentence(text=note, tone="warn", brief=True) for note in s.stop.notes or ())
        parts.extend(_budget(s.stop))
    if s.note:
        parts.append(Sentence(text=s.note, tone="warn", brief=True))
    parts.extend(
        Sentence(text=words.says(f), tone="bad" if f.severity == "blocks" else "warn", brief=True)
        for f in s.all_findings()
    )
    return parts


def _bounds(s: Speed) -> str:
    """What "indistinguishable" rules out: the interval holds 1 and bounds the difference
    either way, which the word alone hides ([0.995, 1.496] still allows a 1.5x loss)."""
    if s.verdict != "indistinguishable":
        return ""
    low, high = s.interval.low - 1.0, s.interval.high - 1.0
    return (
        f" (the target's step time within {low:+.1%} to {high:+.1%} of the baseline's; "
        "a smaller difference needs a narrower interval)"
    )


def _timing(s: Speed) -> list[Part]:
    """The steps of each side's timing processes, where shorter than the workload's."""
    if s.timing is None:
        return []
    parts: list[Part] = []
    for role, t in s.timing.items():
        if t is None:
            continue
        ran = (
            f"its timing processes {t.steps} each"
            if t.shortened
            else "its timing processes all of them too"
        )
        if t.ran and len(set(t.ran[1:])) > 1:
            ran = f"its processes {', '.join(map(str, t.ran))} in order (resized as they ran)"
        parts.append(
            Sentence(
                text=f"steps per process, {role}: the first, its quality run, ran the "
                f"workload's {t.workload_steps}; {ran} ({t.reason})",
                tone="muted",
            )
        )
    return parts


def _budget(stop: Stop) -> list[Part]:
    """What the budget paid for, and what other processes took of the machine meanwhile."""
    parts: list[Part] = []
    if stop.spent_s is not None:
        setup = f" after {stop.setup_s:.1f} s of set-up" if stop.setup_s is not None else ""
        parts.append(
            Sentence(
                text=f"measuring took {stop.spent_s:.1f} s{setup} (the fp64 reference, the "
                "rounds, the compliance runs and the expected-error run)",
                tone="muted",
            )
        )
    if stop.estimate is not None:
        e = stop.estimate
        parts.append(
            Sentence(
                text=f"estimated before measuring: about {e.expected_s:.0f} s in all, "
                f"{e.planned_s:.0f} s of it for {e.processes} process(es) a side, within "
                f"--budget {e.budget_s:g} ({e.basis})",
                tone="muted",
            )
        )
    if stop.probes:
        took = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in stop.probes.items())
        parts.append(Sentence(text=f"set-up parts took: {took}", tone="muted"))
    busy = stop.interference
    if busy is not None and busy.busy:
        parts.append(
            Sentence(
                text=f"other processes used {busy.share:.0%} of the machine's "
                f"{busy.cores} cores while it measured (about {busy.lost_s:.0f} s of the "
                f"{busy.wall_s:.0f} s): the interval is wider for it; rerun on a quiet machine",
                tone="warn",
                brief=True,
            )
        )
    return parts


def _percentiles(info: SideInfo, key: str) -> Percentiles | None:
    section: Generation | Inference | None = info.generation or info.inference
    value = getattr(section, key, None) if section is not None else None
    return value if isinstance(value, Percentiles) else None


def pooled_over(sides: ByRole[SideInfo]) -> str:
    """Which steps a side's latency percentiles pool: every repeat's (as the speed ratio
    does), or the first repeat's where the bundles did not keep their token stamps."""
    counts = []
    for _, info in sides.items():
        section = info.generation or info.inference
        counts.append(section.repeats if section is not None and section.repeats else 1)
    if max(counts) <= 1:
        return "the steady steps of each side's first repeat"
    return (
        "the steady steps of every repeat of each side, pooled as the speed ratio is "
        f"({counts[0]} / {counts[1]} processes)"
    )


def latency(sides: ByRole[SideInfo]) -> list[Part]:
    """p50 / p90 / p99 of each latency figure per side, with the samples behind them."""
    rows = []
    marked = False
    for key, label, unit in LATENCY:
        a, b = _percentiles(sides.baseline, key), _percentiles(sides.target, key)
        if a is None and b is None:
            continue
        counts = " / ".join(fmt.DASH if p is None else str(p.n) for p in (a, b))
        rows.append((label, fmt.percentiles(a, unit), fmt.percentiles(b, unit), counts))
        marked = marked or any(p is not None and p.n < fmt.P99_MIN_SAMPLES for p in (a, b))
    if not rows:
        return []
    legend = f"p50 / p90 / p99 over {pooled_over(sides)}; samples: baseline / target"
    parts: list[Part] = [
        table(
            [
                ("latency", "text"),
                (f"baseline {sides.baseline.side}", "number"),
                (f"target {sides.target.side}", "number"),
                ("samples", "number"),
            ],
            rows,
            title="Latency percentiles",
            legend=f"{legend}; {fmt.P99_LEGEND}" if marked else legend,
            brief=True,
        )
    ]
    definitions: dict[str, str] = {}
    for _, info in sides.items():
        section = info.generation or info.inference
        if section is not None:
            definitions.update(section.definitions)
    definitions.pop("loop", None)
    parts += generation_loop(sides)
    parts += [
        Sentence(text=f"{name.upper()}: {text}", tone="muted") for name, text in definitions.items()
    ]
    return parts


def generation_loop(sides: ByRole[SideInfo]) -> list[Part]:
    """Which generation loop each side timed (parity's own, or the model's generate())."""
    loops = {
        role: info.generation.definitions.get("loop", info.generation.loop or "")
        for role, info in sides.items()
        if info.generation is not None and info.generation.loop is not None
    }
    if not loops:
        return []
    if len(set(loops.values())) == 1:
        return [Sentence(text=f"generation loop: {next(iter(loops.values()))}", brief=True)]
    said = "; ".join(f"{role} {text}" for role, text in loops.items())
    return [Sentence(text=f"generation loops differ: {said}", tone="warn", brief=True)]


MEMORY: tuple[tuple[str, Callable[[MemoryPhase], int | None]], ...] = (
    ("host peak RSS", lambda m: m.host_peak_rss),
    ("device peak allocated", lambda m: m.device.allocated),
    ("device peak reserved", lambda m: m.device.reserved),
)


def _memory_rows(phase: str, a: MemoryPhase | None, b: MemoryPhase | None) -> list[tuple[str, ...]]:
    rows = []
    for label, get in MEMORY:
        values = [None if m is None else get(m) for m in (a, b)]
        if any(x is not None for x in values):
            rows.append((f"{phase}: {label}", *(fmt.nbytes(x) for x in values)))
    return rows


def memory(v: Verdict) -> Section | None:
    m = v.memory
    if m is None:
        return None
    rows: list[tuple[str, ...]] = []
    for phase in ("load", "first_step", "steps"):
        a, b = getattr(m.baseline, phase), getattr(m.target, phase)
        rows += _memory_rows(phase.replace("_", " "), a, b)
    if not rows:
        return None
    legend = (
        "peaks per phase of each side's first repeat, read after a synchronize; device "
        "figures are absent where the device reports none"
    )
    meanings = [
        f"{role} {v.sides.of(role).side}: {COUNTER_MEANING[found.meaning]}"
        for role, side in m.items()
        if (found := side.steps.device.counters) is not None and found.meaning != "none"
    ]
    return _by_role(v, "memory", "peak", rows, "; ".join([legend, *meanings]))


#: what a device's memory figures mean (``MemoryCounters.meaning``)
COUNTER_MEANING = {
    "caching": "allocated is memory in tensors, reserved what the caching allocator holds "
    "from the runtime (reserved >= allocated)",
    "runtime": "allocated is all memory obtained from the runtime, cached blocks included; "
    "reserved not reported (the device holds it at 0)",
    "allocated only": "allocated only: the device reports no reserved figure",
    "none": "no device memory figures",
}


def _role_columns(v: Verdict, first: str) -> list[tuple[str, ColumnKind]]:
    return [
        (first, "text"),
        (f"baseline {v.sides.baseline.side}", "number"),
        (f"target {v.sides.target.side}", "number"),
    ]


def _by_role(v: Verdict, key: str, label: str, rows: list[tuple[str, ...]], legend: str) -> Section:
    """A section of one table: a figure per row, baseline and target side by side."""
    made = table(_role_columns(v, label), rows, legend=legend)
    return Section(key=key, title=key.title(), result="INFO", parts=(made,), plots=(key,))


def _phase_rows(a: Phases, b: Phases) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        ("start + import", fmt.seconds(a.start_import_s), fmt.seconds(b.start_import_s)),
        ("load + move", fmt.seconds(a.load_s), fmt.seconds(b.load_s)),
        ("first step", fmt.seconds(a.first_step_s), fmt.seconds(b.first_step_s)),
    ]
    for label, time, steps in (
        ("warm-up", "warmup_s", "warmup_steps"),
        ("steady state", "steady_s", "steady_steps"),
    ):
        rows.append(
            (
                label,
                *(f"{fmt.seconds(getattr(p, time))} ({getattr(p, steps)} steps)" for p in (a, b)),
            )
        )
    return rows


def phases(v: Verdict) -> Section | None:
    p = v.phases
    if p is None:
        return None
    legend = "wall time of each phase of each side's first repeat"
    return _by_role(v, "phases", "phase", _phase_rows(p.baseline, p.target), legend)


def _price(c: SideCost) -> str:
    p = c.price
    if p is None:
        return "not priced"
    name = f"{p.instance} " if p.instance else ""
    return f"{name}{fmt.usd(p.usd_per_hour)}/h for {p.accelerators} accelerators ({p.source} price)"


def _cost_table(v: Verdict, c: Cost) -> Table:
    a, b = c.baseline, c.target
    unit = c.unit or "unit"
    rows: list[tuple[str, ...]] = [
        ("price", _price(a), _price(b)),
        (
            "per accelerator-hour",
            fmt.usd(a.usd_per_accelerator_hour),
            fmt.usd(b.usd_per_accelerator_hour),
        ),
    ]
    if a.overhead is not None or b.overhead is not None:
        rows.append(("overhead factor", fmt.times(a.overhead), fmt.times(b.overhead)))
    if a.success_rate is not None or b.success_rate is not None:
        rows.append(("basis", _basis(a), _basis(b)))
        rows.append(("time per run", fmt.seconds(a.run_seconds), fmt.seconds(b.run_seconds)))
        rows.append(("success rate", fmt.share(a.success_rate), fmt.share(b.success_rate)))
    rows.append((f"cost per {unit}", fmt.usd(a.unit_cost), fmt.usd(b.unit_cost)))
    return table(
        _role_columns(v, ""),
        rows,
        legend="overhead factor: retries, checkpoints and idle time on top of the measured run",
    )


def _basis(c: SideCost) -> str:
    return words.says(c.basis) if c.basis is not None else fmt.DASH


def _why(c: Cost) -> str:
    """Why there is no cost verdict, with what settles it."""
    return words.says(c.reason) if c.reason is not None else "not judged"


def cost(v: Verdict) -> Section | None:
    c = v.cost
    if c is None:
        return None
    if not c.available:
        parts: list[Part] = [Sentence(text=f"no cost verdict: {_why(c)}", tone="muted", brief=True)]
        return Section(key="cost", title="Cost", result="INFO", parts=tuple(parts))
    unit = c.unit or "unit"
    parts = [_cost_table(v, c)]
    if c.cost_ratio is not None:
        parts.append(
            Sentence(
                text=f"the target costs {fmt.times(c.cost_ratio)} the baseline per {unit} "
                f"({c.verdict}); break-even target price {fmt.usd(c.break_even_usd_per_hour)}/h "
                "per instance",
                tone="strong",
                brief=True,
            )
        )
    if c.sensitivity is not None:
        parts.append(Sentence(text=words.sensitivity(c.sensitivity), tone="muted"))
    if c.engineering is not None:
        repay = c.engineering.units_to_repay
        paid = f"repaid after {repay:,.0f} x {unit}" if repay else "never repaid"
        parts.append(
            Sentence(text=f"engineering {fmt.usd(c.engineering.usd)} one-off: {paid}", tone="muted")
        )
    return Section(key="cost", title="Cost", result="INFO", parts=tuple(parts), plots=("cost",))
