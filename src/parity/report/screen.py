"""The verdict on one screen: the decision and why, one line per gate family and figure,
the few findings that change the decision or how to read it, and where the rest is.

This is what ``parity compare``, ``parity diff`` and ``parity explain RUN`` print by
default; ``--verbose`` (or ``parity explain RUN SECTION``) prints the full view
(``parity.report.view``), where every figure and finding of the verdict is. The HTML
report and ``parity report --md`` lead with the same lines.

- line 1: PASS / FAIL / NOT DECIDED, with the speed word and the cost answer;
- then the workload and the sides, and one line each for quality (each gate with the
  count it decided on), speed (ratio, interval, word, processes a side), memory and cost;
- then at most :data:`MOST` findings (``parity.report.words``), most consequential first,
  each with the action that settles it;
- then where the rest is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from parity.model.findings import Finding, ranked
from parity.model.quality import Quality
from parity.model.verdict import WORKLOAD_GATE, Cost, Gate, Speed, Verdict
from parity.printable import printable
from parity.report import fmt, words
from parity.report.decision import overall

#: findings the screen shows (the rest: ``--verbose``)
MOST = 3
#: the sections ``parity explain RUN SECTION`` takes (the full view's keys)
LABEL = 9


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    """One labelled line of the screen: ``result`` coloured, ``text`` after it."""

    label: str
    result: fmt.Result | None
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Screen:
    """The summary of a verdict, already said: every renderer lays out these strings."""

    result: fmt.Result
    decision: str
    subtitle: str
    rows: tuple[Row, ...]
    findings: tuple[tuple[str, str | None], ...]
    more: int
    rest: str


def build_screen(
    v: Verdict, *, out: Path | str | None = None, report: Path | str | None = None
) -> Screen:
    """The verdict's summary; ``out``: the comparison's directory and ``report`` its HTML
    report, for where the rest is."""
    result = overall(v)
    shown = _worth_showing(v)
    rows = (r for r in (_quality(v), _speed(v), _memory(v), _cost(v)) if r is not None)
    # a bundle's names, errors and outputs may carry terminal controls: every string the
    # renderers lay out is made printable here, once
    return Screen(
        result=result,
        decision=printable(f"{result}: {decision(v)}"),
        subtitle=printable(_subtitle(v)),
        rows=tuple(replace(r, text=printable(r.text)) for r in rows),
        findings=tuple(
            (printable(words.brief(f)), None if (a := words.action(f)) is None else printable(a))
            for f in shown[:MOST]
        ),
        more=max(len(v.all_findings()) - min(len(shown), MOST), 0),
        rest=printable(_rest(out, report)),
    )


def decision(v: Verdict) -> str:
    """Why the result is what it is, with the speed word and the cost answer."""
    failing = [g for g in v.gates if not g.passed]
    why = "; ".join(_failed(g) for g in failing) or "the target passes every gate"
    return "; ".join([why, _speed_word(v), _cost_word(v.cost)])


def _failed(g: Gate) -> str:
    if g.name == "both sides ran":
        return "a side did not run to the end"
    if g.name == WORKLOAD_GATE:
        return words.gate(g)
    if g.name == "quality" and g.decided is False:
        return f"quality {words.gate(g)}"  # which gate lacks evidence, and what settles it
    return f"{g.name} {_gate_word(g)}"


def _gate_word(g: Gate) -> str:
    return "not decided" if g.decided is False else "fails"


def _speed_word(v: Verdict) -> str:
    s = v.speed
    if s is None:
        return "speed withheld"
    if s.verdict in ("faster", "slower"):
        word = f"{fmt.times(max(s.speedup, 1 / s.speedup))} {s.verdict}"
    else:
        word = s.verdict
    return f"speed {word}" + ("" if s.reliable else " (unreliable)")


def _cost_word(c: Cost | None) -> str:
    if c is None:
        return "no cost verdict"
    if not c.available or c.cost_ratio is None:
        unpriced = c.reason is not None and c.reason.code == "cost.unpriced"
        return "cost not priced" if unpriced else "no cost verdict"
    return f"{fmt.times(c.cost_ratio)} the cost per {c.unit or 'unit'} ({c.verdict})"


def _subtitle(v: Verdict) -> str:
    w = v.workload
    what = ", ".join(x for x in (w.size, w.kind) if x)
    return (
        f"{w.name or 'workload'}{f' ({what})' if what else ''}: baseline "
        f"{v.sides.baseline.side} against target {v.sides.target.side}"
    )


def _quality(v: Verdict) -> Row:
    """Each gate with the count it decided on."""
    parts = []
    for g in v.gates:
        if g.name == "both sides ran":
            ok = [f"{s.repeats_ok}/{s.repeats}" for _, s in v.sides.items()]
            parts.append(
                f"both sides ran ({' and '.join(ok)} processes)" if g.passed else words.gate(g)
            )
        elif g.name == "quality" and v.quality is not None:
            parts.append(_quality_count(v.quality, g))
        else:
            parts.append(f"{g.name} passes" if g.passed else f"{g.name}: {words.gate(g)}")
    result: fmt.Result = "PASS" if all(g.passed for g in v.gates) else overall(v)
    first = _first_divergence(v)
    return Row(label="quality", result=result, text=" · ".join(parts) + first)


def _quality_count(q: Quality, g: Gate) -> str:
    """The quality gate with the count of gates it decided on, and what failed or was
    not decided (the gate's own detail)."""
    gated = [c for c in q.checks if c.gated]
    ok = sum(c.passed is True for c in gated)
    said = f"quality {ok} of {len(gated)} gates within tolerance"
    if not g.passed:
        return f"{said}; {words.gate(g)}"
    return f"{said}; not decided: {', '.join(words.undecided(q))}" if q.undecided else said


def _first_divergence(v: Verdict) -> str:
    layers = v.numerics.layers if v.numerics is not None else None
    missing = v.numerics.not_localised if v.numerics is not None else None
    if missing is not None and v.quality is not None and v.quality.failing:
        return f"; {words.says(missing)}"
    if layers is None or layers.first_divergence is None:
        return ""
    row = layers.first_divergence_row
    excess = f" ({fmt.times(row.excess)} what its precision explains)" if row and row.excess else ""
    return f"; first diverging module: {layers.first_divergence}{excess}"


def _speed(v: Verdict) -> Row:
    s = v.speed
    if s is None:
        return Row(label="speed", result="WITHHELD", text=_withheld(v))
    return Row(label="speed", result="INFO", text=speed_line(s))


def speed_line(s: Speed) -> str:
    """Ratio, interval, word and processes a side; what settles an undetermined one."""
    ci = s.interval
    text = (
        f"target/baseline step {fmt.ratio(s.ratio)} [{fmt.ratio(ci.low)}, {fmt.ratio(ci.high)}] "
        f"({ci.confidence:.0%}): {s.verdict} · {_steps(s)} · {s.repeats.baseline} baseline and "
        f"{s.repeats.target} target processes"
    )
    if s.verdict == "undetermined":
        text += f"; {settles(s)}"
    return text


def _steps(s: Speed) -> str:
    return f"{fmt.seconds(s.baseline_median_s)} → {fmt.seconds(s.target_median_s)} a step"


def settles(s: Speed) -> str:
    """What would settle an undetermined speed, in a clause: processes to 3 a side, or
    about how many a side would narrow the interval into 0.67-1.5 on as quiet a machine."""
    from parity.stats import EQUIVALENCE, MIN_PROCESSES

    n = min(s.repeats.baseline, s.repeats.target)
    if s.interval.provisional or n < MIN_PROCESSES:
        return f"{MIN_PROCESSES} processes a side would settle it (--repeats {MIN_PROCESSES})"
    half = math.log(s.interval.high / s.interval.low) / 2
    room = math.log(EQUIVALENCE) - abs(math.log(s.ratio))
    if room <= 0 or half <= 0:
        return "a quieter machine would settle it: the ratio itself is near 0.67 or 1.5"
    need = math.ceil(n * (half / room) ** 2)
    return f"about {need} processes a side on a machine as quiet would settle it (--repeats {need})"


def _withheld(v: Verdict) -> str:
    if v.withheld is not None:
        return words.brief(v.withheld)
    failed = [role for role, info in v.sides.items() if info.status != "ok"]
    if failed:
        return f"the {' and the '.join(failed)} did not run to the end"
    return "a side gave no steady-state samples"


def _memory(v: Verdict) -> Row | None:
    m = v.memory
    if m is None:
        return None
    a, b = m.baseline.steps, m.target.steps
    found = []
    for label, x, y in (
        ("device peak", a.device.allocated, b.device.allocated),
        ("host peak RSS", a.host_peak_rss, b.host_peak_rss),
    ):
        if x is not None and y is not None:
            ratio = f" ({fmt.times(y / x)})" if x else ""
            found.append(f"{label} {fmt.nbytes(x)} → {fmt.nbytes(y)}{ratio}")
    if not found:
        return None
    return Row(label="memory", result="INFO", text="steady steps: " + " · ".join(found))


def _cost(v: Verdict) -> Row | None:
    c = v.cost
    if c is None:
        return None
    if not c.available:
        return Row(label="cost", result="INFO", text=f"no cost verdict: {_why(c)}")
    unit = c.unit or "unit"
    text = (
        f"{fmt.usd(c.baseline.unit_cost)} → {fmt.usd(c.target.unit_cost)} per {unit}"
        f" ({fmt.times(c.cost_ratio)}, {c.verdict})"
    )
    if c.break_even_usd_per_hour is not None:
        text += f" · break-even target price {fmt.usd(c.break_even_usd_per_hour)}/h"
    return Row(label="cost", result="INFO", text=text)


def _why(c: Cost) -> str:
    """Why there is no cost verdict, with what settles it."""
    return words.says(c.reason) if c.reason is not None else "not judged"


def _worth_showing(v: Verdict) -> list[Finding]:
    """The findings that change the decision or how to read it (not context; not why
    speed is withheld, which the speed line says)."""
    held = v.withheld
    return [f for f in ranked(v.all_findings()) if f.severity != "context" and f is not held]


def _rest(out: Path | str | None, report: Path | str | None) -> str:
    run = str(out) if out is not None else "RUN"
    where = f"; bundles and verdict.json in {out}" if out is not None else ""
    html = f"; report: {report}" if report is not None else ""
    return f"every section in full: parity explain {run} [SECTION] (or --verbose){html}{where}"
