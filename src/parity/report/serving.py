"""The serving verdict in words: the terminal lines and an HTML page, from the verdict and
each side's steps (never re-deriving a figure)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from parity.model.serving import (
    Agreement,
    Quantile,
    ServeSide,
    ServeSoak,
    ServeVerdict,
    StepFigures,
)
from parity.report import words

CODES = {
    "side-failed": "a side failed",
    "load-differs": "the two sides did not replay the same load (fingerprints differ)",
    "quality-differs": "the target's greedy answers differ from the baseline's beyond the gate",
    "quality-unmeasured": "no answers of both sides to compare",
    "no-limits": "no --slo limits: no rate was searched, speed is unproven",
    "target-holds-no-rate": "the target holds no rate within the limits; the baseline does",
    "no-rate-passed": "neither side held a rate within the limits (or it was not proven)",
    "below-min-ratio": "the target's highest rate is below --min-ratio of the baseline's",
    "client-bound": "a search reached the client's own ceiling: rates past it are not proven",
    "soak-fails": "the target did not hold its highest passing rate through the soak",
    "soak-inconclusive": "the target's soak could not exclude a latency drift above the bound "
    "(run it longer) or its limits were not proven",
}
DEFINITIONS = (
    "TTFT and E2E from the scheduled time (from the send beside them); TPOT = (E2E - TTFT) / "
    "(output tokens - 1); ITL per token (a chunk's gap over its tokens), ICL per chunk; "
    "p50/p90/p99 with 95% order-statistic bounds [lower, upper] and n; a limit passes when "
    "the upper bound is within it, fails when the lower bound is over it; requests that were "
    "not good count as over every limit"
)


def _t(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def quantile(q: Quantile) -> str:
    return f"p{q.percentile} {_t(q.value_s)} [{_t(q.lower_s)}, {_t(q.upper_s)}] n={q.n}"


def _pick(qs: Sequence[Quantile], p: int) -> Quantile | None:
    return next((q for q in qs if q.percentile == p), None)


def step_line(s: StepFigures) -> str:
    what = f"rate {s.rate:.4g}/s" if s.rate is not None else f"concurrency {s.concurrency}"
    parts = [f"{s.label}: {what}, {s.good}/{s.sent} good, {s.throughput_rps:.3g} req/s"]
    for name, qs in (
        ("ttft", s.from_schedule.get("ttft", ())),
        ("tpot", s.per_token.get("tpot", ())),
    ):
        q = _pick(qs, 99) or _pick(qs, 50)
        if q is not None:
            parts.append(f"{name} {quantile(q)}")
    if s.errors:
        parts.append("not good: " + ", ".join(f"{k} {v}" for k, v in sorted(s.errors.items())))
    if s.client_bound:
        lags = f"dispatch lag p99 {_t(s.dispatch_lag_p99_s)}, loop lag p99 {_t(s.loop_lag_p99_s)}"
        parts.append(f"CLIENT-BOUND ({lags})")
    if s.saturated:
        parts.append("ended early: over-saturated")
    if s.checks:
        parts.append(f"-> {s.decision}")
    return "; ".join(parts)


def _lp(x: float | None) -> str:
    return "not listed" if x is None else f"{x:.3f}"


def logprob_line(q: Agreement) -> str:
    """The log-probability deltas of one quality step, or why there are none."""
    if q.logprobs is None:
        who = " and ".join(q.logprobs_absent) or "either side"
        return f"log-probabilities: not available ({who} server gave none)"
    d = q.logprobs
    out = (
        f"log-probabilities: |target - baseline| mean {d.mean_abs:.3g}, max {d.max_abs:.3g} "
        f"over {d.tokens} agreeing tokens of {d.prompts} prompts"
    )
    at = d.at_divergence
    if at is not None:
        out += (
            f"; first differing token (prompt {at.prompt}, position {at.position}): baseline "
            f"{at.baseline_piece!r} {at.baseline_logprob:.3f} (target's {at.target_piece!r} "
            f"{_lp(at.baseline_of_target)}), target {at.target_piece!r} "
            f"{at.target_logprob:.3f} (baseline's {_lp(at.target_of_baseline)})"
        )
    return out


def soak_line(s: ServeSoak) -> str:
    verdict = "held" if s.passed else ("NOT held" if s.conclusive else "not proven")
    used = sum(w.t_s > s.warmup_s for w in s.windows)
    out = (
        f"soak: {s.rate:.4g} req/s constant for {s.duration_s:g} s, {used} windows after "
        f"{s.warmup_s:g} s warm-up: {s.drift.name} {words.slope(s.drift)}; limits {s.limits}"
    )
    if s.failed_windows:
        out += f"; {s.failed_windows} windows mostly not good"
    return f"{out} -> {verdict}"


def lines(
    v: ServeVerdict, sides: Mapping[str, ServeSide], steps: Mapping[str, Sequence[StepFigures]]
) -> list[str]:
    """The terminal verdict: the answer first, then the evidence."""
    out = [f"serving verdict: {v.outcome.upper()}"]
    out += [f"  {CODES.get(code, code)}" for code in v.codes]
    for q in v.quality:
        where = ""
        if q.first_divergence is not None:
            i, at, a, b = q.first_divergence
            where = f"; first difference: prompt {i}, token {at} ({a} vs {b})"
        out.append(
            f"quality ({q.label}): {q.exact}/{q.prompts} prompts token-for-token equal over "
            f"{q.tokens} tokens (gate {v.min_match:.0%}){where}"
        )
        out.append(f"  {logprob_line(q)}")
    for role, side in sides.items():
        cold = f", cold start {side.cold_start_s:.1f} s" if side.cold_start_s is not None else ""
        status = "" if side.status == "ok" else f" FAILED: {side.reason}"
        out.append(
            f"{role}: {side.url} model {side.model} ({side.prompt_form} prompts){cold}{status}"
        )
        cap = v.capacity.get(role)
        if cap is not None:
            rate = f"{cap.rate:.4g} req/s" if cap.rate is not None else "none"
            out.append(
                f"  highest rate within the limits: {rate} ({cap.stopped}, {len(cap.steps)} steps)"
            )
        if side.client_ceiling_rps is not None:
            out.append(f"  client ceiling (no-work server): {side.client_ceiling_rps:.4g} req/s")
        soaked = v.soak.get(role)
        if soaked is not None:
            out.append(f"  {soak_line(soaked)}")
        out += [f"  {step_line(s)}" for s in steps.get(role, ())]
    if v.ratio is not None:
        out.append(f"highest-rate ratio target/baseline: {v.ratio:.3g}x")
    if v.cost is not None:
        for role, c in (("baseline", v.cost.baseline), ("target", v.cost.target)):
            if c is not None:
                out.append(
                    f"cost {role}: ${c.per_1k_requests:.4g} per 1k requests, "
                    f"${c.per_1m_output_tokens:.4g} per 1M output tokens (${c.usd_per_hour:.4g}/h)"
                )
        if v.cost.break_even_usd_per_hour is not None:
            out.append(f"target break-even price: ${v.cost.break_even_usd_per_hour:.4g}/h")
    for u in v.unproven:
        evidence = words.unproven_evidence(u)
        if u.checked:
            out.append(f"{u.item}: checked ({evidence})")
        else:
            why = f" ({evidence})" if evidence else ""
            out.append(
                f"not yet proven: {u.item}{why}; to check: {words.how_to_check(u.how_to_check)}"
            )
    out.append(f"limits: {', '.join(f'{n} <= {_t(x)}' for n, x in v.limits) or 'none'}")
    out.append(f"definitions: {DEFINITIONS}")
    return out


def page(
    v: ServeVerdict, sides: Mapping[str, ServeSide], steps: Mapping[str, Sequence[StepFigures]]
) -> str:
    """A self-contained HTML page: the verdict, then each side's steps as a table."""
    head = "".join(f"<p>{html.escape(x)}</p>" for x in lines(v, sides, {})[:-1])
    tables = []
    for role, rows in steps.items():
        body = "".join(_row(s) for s in rows)
        tables.append(
            f"<h2>{html.escape(role)}</h2><table><tr><th>step</th><th>offered</th><th>good</th>"
            "<th>TTFT p50/p99 (schedule)</th><th>TTFT p99 (send)</th><th>TPOT p50/p99</th>"
            f"<th>ITL p50</th><th>decision</th></tr>{body}</table>"
        )
    style = "table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}"
    tables.insert(0, _curves(v, steps))
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>parity serve</title>"
        f"<style>{style}</style></head><body><h1>parity serve: {v.outcome}</h1>{head}"
        f"{''.join(tables)}<p><small>{html.escape(DEFINITIONS)}</small></p></body></html>\n"
    )


def _cell(qs: Sequence[Quantile], *ps: int) -> str:
    got = [_pick(qs, p) for p in ps]
    return " / ".join(html.escape(quantile(q)) if q else "-" for q in got)


def _row(s: StepFigures) -> str:
    offered = f"{s.rate:.4g}/s" if s.rate is not None else f"c={s.concurrency}"
    cells = (
        html.escape(s.label),
        offered,
        f"{s.good}/{s.sent}",
        _cell(s.from_schedule.get("ttft", ()), 50, 99),
        _cell(s.from_send.get("ttft", ()), 99),
        _cell(s.per_token.get("tpot", ()), 50, 99),
        _cell(s.per_token.get("itl", ()), 50),
        html.escape(s.decision + (" (client-bound)" if s.client_bound else "")),
    )
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _curves(v: ServeVerdict, steps: Mapping[str, Sequence[StepFigures]]) -> str:
    """Rate against each limited percentile (point and 95% upper bound), per side, with
    the limit drawn; empty without matplotlib or rate steps."""
    try:
        from parity.report.svg import COLORS, Canvas
    except ImportError:
        return ""
    out = []
    for i, (name, limit) in enumerate(v.limits):
        canvas = Canvas(f"serve-curve-{i}", height=2.8)
        ax = canvas.axes[0]
        for role, rows in steps.items():
            pts = sorted(
                (s.rate, c.quantile)
                for s in rows
                if s.rate is not None and s.label.startswith("rate=")
                for c in s.checks
                if c.name == name and c.quantile is not None and c.quantile.value_s is not None
            )
            if not pts:
                continue
            xs = [r for r, _ in pts]
            ys = [q.value_s or 0.0 for _, q in pts]
            ups = [(q.upper_s if q.upper_s is not None else q.value_s or 0.0) for _, q in pts]
            color = COLORS.get(role, "#333")
            canvas.mark(ax.plot(xs, ys, "o-", color=color, label=role), len(xs))
            ax.vlines(xs, ys, ups, colors=color, alpha=0.5)
        ax.axhline(limit, color="#c00", linestyle="--", label=f"{name} limit")
        ax.set_xlabel("offered rate (requests/s)")
        ax.set_ylabel(f"{name} (s)")
        ax.legend()
        plot = canvas.render(f"{name} against the offered rate")
        if plot is not None:
            out.append(f"<h2>{html.escape(plot.title)}</h2>{plot.svg}")
    return "".join(out)
