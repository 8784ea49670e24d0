"""The view's quality and numerics sections: every check with its result word and figure,
determinism and convergence, and where the target's numbers start to differ from fp64."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from parity.model.quality import (
    AgreementCheck,
    Determinism,
    LayerRow,
    Localisation,
    LossCheck,
    NonFiniteCheck,
    NumericsSection,
    OutputCheck,
    QualityCheck,
    ReferenceCheck,
    TokensCheck,
    TrajectoryCheck,
)
from parity.model.verdict import Verdict
from parity.report import fmt
from parity.report.parts import Part, Row, Section, Sentence, table

#: rows of the per-module table in a short report (the HTML shows every row)
LAYER_ROWS = 12
CHECK_LEGEND = (
    "PASS/FAIL: a gated check; INFO: reported, not gated. tolerance: the largest relative "
    "difference that passes"
)


C = TypeVar("C", bound=QualityCheck)


def _measured(check: C, value: float | None, render: Callable[[C, float], str]) -> str:
    """A check's figures from the value it is measured by; its detail (why) without it."""
    return check.detail or fmt.DASH if value is None else render(check, value)


def _loss(c: LossCheck, rel: float) -> str:
    text = (
        f"final {fmt.number(c.final_baseline)} vs {fmt.number(c.final_target)} (rel "
        f"{fmt.sci(rel)}, max over steps {fmt.sci(c.max_rel)})"
    )
    if c.first_step_outside_band is not None:
        text += f"; first step outside the band: {c.first_step_outside_band}"
    return text


def _output(c: OutputCheck, rel_rmse: float) -> str:
    text = f"rel RMSE {fmt.sci(rel_rmse)}, max abs {fmt.sci(c.max_abs)}"
    return text + ("" if c.cosine is None else f", cosine {c.cosine:.4f}")


def _tokens(c: TokensCheck, agreement: float) -> str:
    text = f"{agreement:.0%} of tokens agree"
    firsts = [str(i) for i in c.first_difference if i is not None]
    if firsts:
        text += f"; first difference at position {', '.join(firsts)}"
    margins = [m for m in c.margins or () if m is not None]
    if margins and c.margin_threshold is not None:
        shown = ", ".join(fmt.sci(m) for m in margins)
        text += f" (top-2 margin there {shown}; near-tie within {fmt.sci(c.margin_threshold)})"
    return text


def _agreement(c: AgreementCheck, value: float) -> str:
    if c.metric == "cosine":
        return f"smallest cosine {value:.4f} over {c.rows} rows (at least {c.threshold:g})"
    text = f"top-1 agreement {value:.1%} of decisive rows (at least {c.threshold:.0%})"
    if c.agreement is not None:
        text += f"; {c.agreement:.1%} of all {c.rows} rows"
    if c.near_ties:
        text += f", {c.near_ties} near-ties (margin <= {fmt.sci(c.margin_threshold)})"
    return text


def _trajectory(c: TrajectoryCheck, worst_ratio: float) -> str:
    text = f"{c.steps} steps; worst step {c.worst_step} at {worst_ratio:.2g}x its bound"
    if c.first_failing_step is not None:
        text += f"; first step over its bound: {c.first_failing_step}"
    if c.drift_from_step is not None:
        text += f"; windowed from step {c.drift_from_step} (the runs drift apart)"
    return text + f"; comparator: the {_COMPARATOR[c.comparator]}"


def _nonfinite(c: NonFiniteCheck) -> str:
    step = f"step {c.step}" if c.step is not None else "after the steps"
    module = f", module {c.module}" if c.module else ""
    return f"{c.what} not finite: first at {step}{module}"


_COMPARATOR = {"baseline": "baseline", "expected": "expected-error run"}


def _reference(c: ReferenceCheck) -> str:
    if c.kind == "cosine":
        if c.cosine is None:
            return c.detail or fmt.DASH
        return f"cosine {c.cosine:.4f} with the baseline (no fp64 reference)"
    if c.rmse_target is None:
        return c.detail or fmt.DASH
    comparator = _COMPARATOR[c.comparator or "baseline"]
    error = c.rmse_expected if c.comparator == "expected" else c.rmse_baseline
    text = (
        f"RMSE vs fp64 {fmt.sci(c.rmse_target)}, bound {fmt.sci(c.bound)} ({fmt.number(c.k)}x "
        f"the {comparator}'s {fmt.sci(error)} + tol/10)"
    )
    if c.rule:
        text += f", passes by {c.rule}"
    if c.min_atol is not None:
        text += f"; smallest passing atol {fmt.sci(c.min_atol)}"
    return text


def figure(check: QualityCheck) -> str:
    """The figures of a check in one phrase; its detail where the figures leave it unsaid."""
    if isinstance(check, LossCheck):
        text = _measured(check, check.final_rel, _loss)
    elif isinstance(check, OutputCheck):
        text = _measured(check, check.rel_rmse, _output)
    elif isinstance(check, TokensCheck):
        text = _measured(check, check.agreement, _tokens)
    elif isinstance(check, AgreementCheck):
        text = _measured(check, check.value, _agreement)
    elif isinstance(check, TrajectoryCheck):
        text = _measured(check, check.worst_ratio, _trajectory)
    elif isinstance(check, NonFiniteCheck):
        text = _nonfinite(check)
    else:
        text = _reference(check)
    if check.detail and check.detail not in text:
        text += f" ({check.detail})"
    return text


def check_rows(checks: tuple[QualityCheck, ...]) -> list[Row]:
    return [
        Row(
            cells=(
                c.name,
                fmt.result_of(c.passed, gated=c.gated),
                figure(c),
                fmt.tolerance(c.tolerance),
            ),
            highlight=c.gated and not c.passed,
        )
        for c in checks
    ]


def _determinism(role: str, d: Determinism) -> Sentence:
    if not d.checked:
        return Sentence(text=f"determinism ({role}): not checked ({d.detail})", tone="muted")
    if d.bitwise_equal:
        text = "bitwise equal across two fresh processes"
    else:
        text = (
            f"not bitwise equal across two fresh processes: max output difference "
            f"{fmt.sci(d.max_abs_output_diff)}, max loss difference {fmt.sci(d.max_abs_loss_diff)}"
        )
    return Sentence(text=f"determinism ({role}): {text}", tone="muted")


def quality(v: Verdict) -> Section | None:
    q = v.quality
    if q is None:
        return None
    parts: list[Part] = [
        table(
            [("check", "text"), ("result", "result"), ("figure", "text"), ("tolerance", "number")],
            check_rows(q.checks),
            legend=CHECK_LEGEND,
            brief=True,
        ),
        Sentence(text=f"method: {q.method}", tone="muted"),
    ]
    if q.determinism is not None:
        parts += [_determinism(role, d) for role, d in q.determinism.items()]
    if q.convergence is not None:
        for role, conv in q.convergence.items():
            mean = conv.mean_time_s
            reached = f"{fmt.seconds(mean)} mean" if mean is not None else "never reached"
            parts.append(
                Sentence(
                    text=f"time to loss {conv.target_loss:g} ({role}): {reached}, "
                    f"{conv.success_rate:.0%} of {len(conv.runs)} runs converged"
                )
            )
    n = v.numerics
    if n is not None and not n.available:
        parts.append(Sentence(text=f"fp64 numerics: not run ({n.reason})", tone="muted"))
    return Section(
        key="quality",
        title="Quality: the target against the baseline",
        result="PASS" if q.passed else "FAIL",
        parts=tuple(parts),
        plots=("loss",),
    )


def numerics(v: Verdict, *, layer_rows: int | None = LAYER_ROWS) -> Section | None:
    """fp64 localisation: the per-module table, the first divergence, the top amplifiers.
    Its gates are quality checks (shown there)."""
    n = v.numerics
    if n is None or not n.available:
        return None
    parts: list[Part] = [
        Sentence(
            text=f"target precision {n.precision}: a gate passes within {fmt.number(n.k)}x the "
            f"comparator's error against fp64 + {fmt.sci(n.tolerance / 10)}, or allclose at "
            f"rtol {fmt.sci(n.tolerance)} (atol: that times the output's RMS); the comparator "
            "is the baseline, or the expected-error "
            "run (the workload on the CPU at the target's precision) where its error is larger",
            tone="muted",
        )
    ]
    if n.reference is not None and not n.reference.available:
        parts.append(Sentence(text=f"no fp64 reference: {n.reference.reason}", tone="warn"))
    if n.expected is not None:
        parts.append(_expected_note(n))
    if n.layers is not None:
        parts += _localisation(n, n.layers, layer_rows)
    return Section(
        key="numerics",
        title="Numerics against fp64",
        result=fmt.result_of(n.passed),
        parts=tuple(parts),
        plots=("layers",),
    )


def _expected_note(n: NumericsSection) -> Sentence:
    e = n.expected
    assert e is not None
    if e.available:
        return Sentence(
            text=f"expected error of {n.precision} alone: measured on the CPU ({e.bundle})",
            tone="muted",
        )
    return Sentence(text=f"expected error of {n.precision}: {e.reason}", tone="warn")


def shown_layers(loc: Localisation, limit: int | None) -> tuple[list[LayerRow], int]:
    """The rows a table shows, in execution order: the leaf modules (and the first diverging
    module, a container where its own code diverged), a window from just before the first
    divergence plus every module named as an amplifier; and how many such rows exist."""
    leaves = [r for r in loc.table if r.leaf or r.module == loc.first_divergence]
    if limit is None or len(leaves) <= limit:
        return leaves, len(leaves)
    start = next((i for i, r in enumerate(leaves) if r.module == loc.first_divergence), 0)
    begin = max(0, min(start - 2, len(leaves) - limit))
    named = set(loc.top_amplification) | {loc.first_divergence}
    keep = {r.module for r in leaves[begin : begin + limit]} | named
    return [r for r in leaves if r.module in keep], len(leaves)


def _flag(row: LayerRow, loc: Localisation) -> str:
    flags = []
    if row.module == loc.first_divergence:
        flags.append("first")
    if row.module in loc.top_amplification:
        flags.append(f"top {loc.top_amplification.index(row.module) + 1}")
    return ", ".join(flags)


def _error(value: float | None) -> str:
    return fmt.sci(value) if value is not None else "not finite"


def _layer_cells(r: LayerRow, loc: Localisation) -> tuple[str, ...]:
    return (
        r.module,
        fmt.sci(r.baseline_error) if r.baseline_error is not None else "not finite",
        fmt.sci(r.expected_error) if r.expected_error is not None else fmt.DASH,
        _error(r.target_error),
        f"{r.excess:.2g}" if r.excess is not None else fmt.DASH,
        _flag(r, loc),
    )


def _localisation(n: NumericsSection, loc: Localisation, limit: int | None) -> list[Part]:
    rows, total = shown_layers(loc, limit)
    count = f"all {total}" if len(rows) == total else f"{len(rows)} of {total}"
    where = f", {loc.capture}" if loc.capture else ""
    parts: list[Part] = [
        table(
            [
                ("module", "name"),
                ("baseline err", "number"),
                ("expected err", "number"),
                ("target err", "number"),
                ("excess", "number"),
                ("flag", "text"),
            ],
            [
                Row(cells=_layer_cells(r, loc), highlight=r.module == loc.first_divergence)
                for r in rows
            ],
            title=f"Per-module error against fp64 (target {n.precision}{where}): {count} leaf "
            "modules",
            legend="err: relative error against fp64; expected: the error the target's "
            "precision alone makes there, measured on the CPU; excess: the target's error "
            f"over {fmt.number(loc.factor or 1)}x what its precision and its input explain (> 1 "
            "diverges); flag: first = first diverging module, top N = the Nth largest amplifier",
        )
    ]
    first = loc.first_divergence
    parts.append(
        Sentence(
            text=f"first diverging module: {first} ({loc.rule})"
            if first
            else f"no module diverges ({loc.rule})",
            tone="bad" if first else "good",
            brief=True,
        )
    )
    if loc.top_amplification:
        parts.append(
            Sentence(text="top error amplifiers: " + ", ".join(loc.top_amplification), tone="muted")
        )
    return parts
