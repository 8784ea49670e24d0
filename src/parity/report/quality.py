"""The view's quality and numerics sections: every check with its result word and figure,
determinism and convergence, and where the target's numbers start to differ from fp64."""

from __future__ import annotations

import math

from parity.model.quality import (
    AgreementCheck,
    Determinism,
    LayerRow,
    Localisation,
    LocalisationCheck,
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
from parity.report import fmt, words
from parity.report.parts import Part, Row, Section, Sentence, table

#: rows of the per-module table in a short report (the HTML shows every row)
LAYER_ROWS = 12
CHECK_LEGEND = (
    "PASS/FAIL: a gated check; NOT DECIDED: too few decisive rows to tell its threshold "
    "from chance (never a pass); INFO: reported, not gated. figure: the figure that gates, "
    "then figures marked 'reported' that do not; bound: what that figure must meet, and "
    "the method that sets it"
)
_COMPARATOR = {"baseline": "baseline", "expected": "expected-error run"}


def check_result(c: QualityCheck) -> fmt.Result:
    """A check's result word: INFO where it is not gated, NOT DECIDED where it is gated
    and has too little evidence for a result."""
    if c.gated and c.passed is None:
        return "NOT DECIDED"
    return fmt.result_of(c.passed, gated=c.gated)


def _loss(c: LossCheck) -> tuple[str, str]:
    if c.final_rel is None:
        return words.detail(c) or fmt.DASH, fmt.DASH
    text = (
        f"final loss rel diff {fmt.sci(c.final_rel)}; reported: {fmt.number(c.final_baseline)} "
        f"vs {fmt.number(c.final_target)}, max over steps {fmt.sci(c.max_rel)}"
    )
    if c.first_step_outside_band is not None:
        text += f", first step outside the band {c.first_step_outside_band}"
    return text, f"<= {fmt.tolerance(c.tolerance)} (target vs baseline)"


def _output(c: OutputCheck) -> tuple[str, str]:
    if c.rel_rmse is None:
        return words.detail(c) or fmt.DASH, fmt.DASH
    text = f"rel RMSE {fmt.sci(c.rel_rmse)}; reported: max abs {fmt.sci(c.max_abs)}"
    text += "" if c.cosine is None else f", cosine {c.cosine:.4f}"
    return text, f"<= {fmt.tolerance(c.tolerance)} (target vs baseline)"


#: differing tokens a quality row names (the rest are counted)
SHOWN_DIVERGENCES = 8


def _divergences(c: TokensCheck) -> str:
    if c.divergences is not None:
        shown = [
            f"prompt {d.prompt} token {d.position} (margin {fmt.sci(d.margin)}"
            f"{', near-tie' if d.near_tie else ''})"
            for d in c.divergences[:SHOWN_DIVERGENCES]
        ]
        more = len(c.divergences) - len(shown)
        label = "differences" if c.teacher_forced else "first differences"
        text = f"; {label}: " + ", ".join(shown) if shown else ""
        return text + (f" and {more} more" if more > 0 else "")
    firsts = [str(i) for i in c.first_difference if i is not None]
    return f"; first difference at position {', '.join(firsts)}" if firsts else ""


def _tokens(c: TokensCheck) -> tuple[str, str]:
    if c.agreement is None:
        return words.detail(c) or fmt.DASH, fmt.DASH
    if c.compared is not None and c.prompts is not None:
        text = f"{c.agreement:.1%} of {c.compared} tokens agree "
        text += f"({c.prompts} prompts x {c.new_tokens} new"
        if c.teacher_forced:
            text += (
                f"; the {c.teacher_forced} after a first difference teacher-forced on the "
                "baseline's tokens)"
            )
        elif c.not_compared:
            text += f", each up to its first difference; {c.not_compared} after it not compared)"
        else:
            text += ")"
    else:
        text = f"{c.agreement:.0%} of tokens agree"
    text += _divergences(c)
    bound = (
        fmt.DASH
        if c.margin_threshold is None
        else f"a first difference only where the baseline's top-2 margin < "
        f"{fmt.sci(c.margin_threshold)} (near-tie)"
    )
    return text, bound


def _agreement(c: AgreementCheck) -> tuple[str, str]:
    if c.metric == "cosine":
        if c.value is None:
            return words.detail(c) or fmt.DASH, fmt.DASH
        text = f"smallest cosine {c.value:.4f} over {c.rows} rows"
        if words.detail(c):  # how it was read (every position: from sketches)
            text += f" ({words.detail(c)})"
        if c.not_compared:
            text += f", {c.not_compared} rows after a first difference not compared"
        return text, f">= {c.threshold:g}"
    need = f" over >= {c.required} decisive rows" if c.required is not None else ""
    bound = f">= {c.threshold:.0%}{need} (near-tie margin {fmt.sci(c.margin_threshold)})"
    decisive = c.decisive if c.decisive is not None else c.rows - (c.near_ties or 0)
    if c.value is None:
        text = f"{decisive} decisive rows of {c.rows}: nothing to decide on"
    else:
        text = f"top-1 agreement {c.value:.1%} of {decisive} decisive rows"
    if c.agreement is not None:
        text += f"; reported: {c.agreement:.1%} of all {c.rows} rows"
    if c.not_compared:
        text += f", {c.not_compared} rows after a first difference not compared"
    return text, bound


def _trajectory(c: TrajectoryCheck) -> tuple[str, str]:
    bound = f"<= 1x ({fmt.number(c.k)}x the {_COMPARATOR[c.comparator]}'s error so far + tol/10)"
    if c.worst_ratio is None:
        return words.detail(c) or fmt.DASH, bound
    text = f"worst step {c.worst_step} at {c.worst_ratio:.2g}x its bound ({c.steps} steps)"
    if c.first_failing_step is not None:
        text += f"; first step over its bound: {c.first_failing_step}"
    if c.drift_from_step is not None:
        text += f"; windowed from step {c.drift_from_step} (the runs drift apart)"
    return text, bound


def _nonfinite(c: NonFiniteCheck) -> tuple[str, str]:
    step = f"step {c.step}" if c.step is not None else "after the steps"
    module = f", module {c.module}" if c.module else ""
    return f"{c.what} not finite: first at {step}{module}", "every value finite"


def _modules(c: LocalisationCheck) -> tuple[str, str]:
    factor = fmt.number(c.factor) if c.factor is not None else "k"
    bound = f"every module <= {factor}x what its precision and its input explain"
    if c.module is None:
        return f"no module beyond that ({c.capture})" if c.capture else "no module beyond", bound
    times = (
        f": {fmt.number(c.excess * c.factor)}x what explains it"
        if c.excess is not None and c.factor is not None
        else ""
    )
    return f"{c.module} diverges{times} ({c.capture})", bound


def _reference(c: ReferenceCheck) -> tuple[str, str]:
    if c.kind == "cosine":
        if c.cosine is None:
            return words.detail(c) or fmt.DASH, fmt.DASH
        return f"cosine {c.cosine:.4f} with the baseline", ">= 0.99 (no fp64 reference)"
    if c.rmse_target is None:
        return words.detail(c) or fmt.DASH, fmt.DASH
    comparator = _COMPARATOR[c.comparator or "baseline"]
    error = c.rmse_expected if c.comparator == "expected" else c.rmse_baseline
    bound = (
        f"<= {fmt.sci(c.bound)} ({fmt.number(c.k)}x the {comparator}'s {fmt.sci(error)} + "
        "tol/10), or allclose"
    )
    text = f"RMSE vs fp64 {fmt.sci(c.rmse_target)}"
    if c.rule:
        text += f", passes by {c.rule}"
    if c.min_atol is not None:
        text += f"; reported: smallest passing atol {fmt.sci(c.min_atol)}"
    return text, bound


def gating(check: QualityCheck) -> tuple[str, str]:
    """A check's gating figure (then its reported-only figures, marked) and its bound with
    the method that sets it; its detail where the figures leave it unsaid."""
    if isinstance(check, LossCheck):
        text, bound = _loss(check)
    elif isinstance(check, OutputCheck):
        text, bound = _output(check)
    elif isinstance(check, TokensCheck):
        text, bound = _tokens(check)
    elif isinstance(check, AgreementCheck):
        text, bound = _agreement(check)
    elif isinstance(check, TrajectoryCheck):
        text, bound = _trajectory(check)
    elif isinstance(check, NonFiniteCheck):
        text, bound = _nonfinite(check)
    elif isinstance(check, LocalisationCheck):
        text, bound = _modules(check)
    else:
        text, bound = _reference(check)
    said = words.detail(check)
    if said and said not in text:
        text += f" ({said})"
    if not check.gated and bound != fmt.DASH:
        bound = f"reported only; {bound}"
    return text, bound


def figure(check: QualityCheck) -> str:
    """A check's figures in one phrase (its gating figure, then what is reported)."""
    return gating(check)[0]


def check_rows(checks: tuple[QualityCheck, ...]) -> list[Row]:
    rows = []
    for c in checks:
        text, bound = gating(c)
        result = check_result(c)
        rows.append(Row(cells=(c.name, result, text, bound), highlight=result in _BAD))
    return rows


_BAD = ("FAIL", "NOT DECIDED")


def _determinism(role: str, d: Determinism) -> Sentence:
    if not d.checked:
        return Sentence(text=f"determinism ({role}): not checked ({words.detail(d)})", tone="muted")
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
            [("check", "text"), ("result", "result"), ("figure", "text"), ("bound", "text")],
            check_rows(q.checks),
            legend=CHECK_LEGEND,
            brief=True,
        ),
        Sentence(text=f"method: {words.method(q.method)}", tone="muted"),
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
        parts.append(
            Sentence(text=f"fp64 numerics: not run ({words.numerics_reason(n)})", tone="muted")
        )
    if n is not None and n.not_localised is not None:
        said = words.says(n.not_localised)
        parts.append(Sentence(text=f"localisation: {said}", tone="warn", brief=True))
    if q.undecided:
        parts.append(Sentence(text=f"not decided: {', '.join(words.undecided(q))}", tone="warn"))
    return Section(
        key="quality",
        title="Quality: the target against the baseline",
        result="PASS" if q.passed else ("FAIL" if q.failing else "NOT DECIDED"),
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
        parts.append(Sentence(text=f"no fp64 reference: {words.note(n.reference)}", tone="warn"))
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
    return Sentence(text=f"expected error of {n.precision}: {words.note(e)}", tone="warn")


def shown_layers(loc: Localisation, limit: int | None) -> tuple[list[LayerRow], int]:
    """The rows a table shows and how many such rows exist: the leaf modules (and the
    first diverging module, a container where its own code diverged). Within ``limit``,
    what matters leads, whatever its layer: the first diverging module, the top
    amplifiers in rank order, then the largest target errors (not finite first); None:
    every row, in execution order."""
    leaves = [r for r in loc.table if r.leaf or r.module == loc.first_divergence]
    if limit is None or len(leaves) <= limit:
        return leaves, len(leaves)
    by_name = {r.module: r for r in leaves}
    named = [loc.first_divergence, *loc.top_amplification]
    lead = [by_name[m] for m in dict.fromkeys(m for m in named if m in by_name)]
    errors = sorted(
        (r for r in leaves if r not in lead),
        key=lambda r: -math.inf if r.target_error is None else -r.target_error,
    )
    return lead + errors[: max(0, limit - len(lead))], len(leaves)


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
    count = (
        f"all {total} leaf modules, in execution order"
        if len(rows) == total
        else f"{len(rows)} of {total} leaf modules: the first to diverge, the top amplifiers, "
        "then the largest errors; full table in the HTML report and verdict.json"
    )
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
            title=f"Per-module error against fp64 (target {n.precision}{where}): {count}",
            legend="err: relative error against fp64; expected: the error the target's "
            "precision alone makes there, measured on the CPU; excess: the target's error "
            f"over {fmt.number(loc.factor or 1)}x what its precision and its input explain (> 1 "
            "diverges); flag: first = first diverging module, top N = the Nth largest amplifier",
        )
    ]
    first = loc.first_divergence
    parts.append(
        Sentence(
            text=f"first diverging module: {first} ({words.localisation_rule(loc)})"
            if first
            else f"no module diverges ({words.localisation_rule(loc)})",
            tone="bad" if first else "good",
            brief=True,
        )
    )
    if loc.top_amplification:
        parts.append(
            Sentence(text="top error amplifiers: " + ", ".join(loc.top_amplification), tone="muted")
        )
    return parts
