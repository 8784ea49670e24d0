"""The view's decision sections: the headline, the gates, the sides, fairness, what
differs between the sides, and what the comparison has not proven.

Each function reads the typed verdict and returns a ``Section`` (or None when it would
be empty); none formats a number itself (``parity.report.fmt`` does).
"""

from __future__ import annotations

import json

from parity.bundle import SideRuns
from parity.judge.verdict import REFERENCES_GATE
from parity.model.codec import Json
from parity.model.verdict import WORKLOAD_GATE, ByRole, Gate, SideInfo, Verdict
from parity.report import fmt, stack, words
from parity.report.parts import Part, Row, Section, Sentence, table

Sides = ByRole[SideRuns | None]


def overall(v: Verdict) -> fmt.Result:
    """PASS, FAIL, or NOT DECIDED where every gate that did not pass lacked evidence;
    ERROR where the user's workload failed on its own (exit code 2)."""
    if v.passed:
        return "PASS"
    if own_failure(v) is not None:
        return "ERROR"
    return "NOT DECIDED" if all(g.passed or g.decided is False for g in v.gates) else "FAIL"


def own_failure(v: Verdict) -> Gate | None:
    """The gate saying the user's workload failed on its own, where it did."""
    return next((g for g in v.gates if g.name == WORKLOAD_GATE and not g.passed), None)


def headline(v: Verdict) -> tuple[str, str]:
    """The report's title and the line under it."""
    title = "PASS: the target passes every gate" if v.passed else "FAIL: the target fails a gate"
    own = own_failure(v)
    if own is not None:  # the user's workload failed alike on both sides
        title = f"ERROR: {words.gate(own)} (exit code 2)"
    if overall(v) == "NOT DECIDED":
        title = f"NOT DECIDED: a gate has too little evidence to pass (exit code {v.exit_code})"
        refs = next((g for g in v.gates if g.name == REFERENCES_GATE and not g.passed), None)
        if refs is not None:  # a run the target is judged against failed, not the target
            title = (
                f"NOT DECIDED: {words.gate(refs)} (not the target's failure; "
                f"exit code {v.exit_code})"
            )
    w = v.workload
    what = ", ".join(x for x in (w.size, w.kind) if x)
    subtitle = (
        f"{w.name or 'workload'}{f' ({what})' if what else ''}: baseline {v.sides.baseline.side} "
        f"against target {v.sides.target.side}; fingerprint {w.fingerprint[:12]}"
    )
    return title, subtitle


def _gate_result(g: Gate) -> fmt.Result:
    return "NOT DECIDED" if g.decided is False else fmt.result_of(g.passed)


def gates(v: Verdict) -> Section:
    rows = [
        Row(cells=(g.name, _gate_result(g), words.gate(g)), highlight=not g.passed) for g in v.gates
    ]
    gate_table = table(
        [("gate", "text"), ("result", "result"), ("detail", "text")], rows, brief=True
    )
    drift = stack.drift(v)  # not a gate, but said where the gates are read
    return Section(
        key="gates",
        title="Gates",
        result=overall(v),
        parts=(gate_table,) if drift is None else (gate_table, drift),
    )


def _side_rows(a: SideInfo, b: SideInfo) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        ("status", a.status, b.status),
        ("device", a.device_name or fmt.DASH, b.device_name or fmt.DASH),
        ("repeats ok", f"{a.repeats_ok}/{a.repeats}", f"{b.repeats_ok}/{b.repeats}"),
        ("median step (steady)", fmt.seconds(a.median_step_s), fmt.seconds(b.median_step_s)),
    ]
    for unit in ("samples", "tokens"):
        values = [
            None if s.throughput is None else getattr(s.throughput, f"{unit}_per_s") for s in (a, b)
        ]
        if any(x is not None for x in values):
            rows.append((f"throughput ({unit})", *(fmt.rate(x, unit) for x in values)))
    fa, fb = a.flops, b.flops
    if fa is not None or fb is not None:  # a count, or a reason below: never a missing row
        rows.append(("FLOPs per step", fmt.flop_count(fa), fmt.flop_count(fb)))
    if (fa and fa.achieved_flops) or (fb and fb.achieved_flops):
        rows.append(
            (
                "achieved FLOP/s",
                fmt.flops(fa.achieved_flops if fa else None),
                fmt.flops(fb.achieved_flops if fb else None),
            )
        )
        rows.append(("MFU", _mfu(a), _mfu(b)))
    return rows


def _mfu(side: SideInfo) -> str:
    f = side.flops
    if f is None or f.mfu is None or f.peak is None:
        return "no peak known"
    unit = f" per {f.peak.unit}" if f.peak.unit else ""
    text = f"{f.mfu:.1%} of {f.peak.flops / 1e12:,.0f} TFLOP/s {f.peak.dtype}{unit}"
    if f.mfu > 1:  # faster than the device can run: the count or the peak is wrong
        text += ": above the peak, so the FLOP count or the peak's format is wrong"
    return text


def sides(v: Verdict, runs: Sides | None) -> Section:
    """Each side: what ran, whether it ended well, its pooled headline figures, and the
    warnings recorded with those figures (noise, a capped steady state)."""
    a, b = v.sides.baseline, v.sides.target
    legend = (
        "median step: the median steady-state step over every successful repeat, the "
        "figure the speed ratio compares; throughput and FLOP/s follow from it"
    )
    parts: list[Part] = [
        table(
            [("", "text"), (f"baseline {a.side}", "number"), (f"target {b.side}", "number")],
            _side_rows(a, b),
            legend=legend,
            brief=True,
        )
    ]
    for role, info in v.sides.items():
        if info.status != "ok" and info.stderr_tail:
            parts.append(Sentence(text=f"the {role}'s stderr ends with:", tone="bad"))
            parts.append(Sentence(text=info.stderr_tail, verbatim=True))
        noisiest = (
            f" (noisiest of {info.repeats_ok} repeats: {info.noisiest})" if info.noisiest else ""
        )
        for warning in info.noise_warnings:
            said = f"{role} step times: {warning}{noisiest}"
            parts.append(Sentence(text=said, tone="warn", brief=True))
        for cut in info.logs_cut or ():
            parts.append(Sentence(text=f"{role} {cut}", tone="warn"))
        if info.flops is not None and info.flops.error:
            parts.append(
                Sentence(text=f"{role} FLOPs not counted: {info.flops.error}", tone="warn")
            )
        side = runs.of(role) if runs is not None else None
        parts += _capped(role, side)
    ok = all(s.status == "ok" for _, s in v.sides.items())
    return Section(key="sides", title="Sides", result="PASS" if ok else "FAIL", parts=tuple(parts))


def _capped(role: str, side: SideRuns | None) -> list[Sentence]:
    """A steady state that was never reached within the cap, per repeat (in metrics.json)."""
    if side is None:
        return []
    out = []
    for bundle in side.ok:
        steady = bundle.metrics.steady_state if bundle.metrics is not None else None
        if steady is None or not steady.capped:
            continue
        out.append(
            Sentence(
                text=f"{role} {bundle.path.name}: {steady.message}; its median step includes "
                "steps that were still warming up",
                tone="warn",
                brief=True,
            )
        )
    return out


def fairness(v: Verdict) -> Section:
    """Both sides ran the same frozen workload, or what differs and why that is allowed."""
    fair, contract = v.fairness, v.contract
    parts: list[Part] = []
    if fair.verified is False:
        parts.append(
            Sentence(
                text=f"{fair.note or 'script mode'}: both sides ran the same command, but parity "
                "did not see their weights and data (the contract is unverified)",
                tone="warn",
                brief=True,
            )
        )
    elif fair.fingerprint_match:
        fields = ", ".join(r.field.replace("_", " ") for r in contract.must_match)
        parts.append(
            Sentence(
                text=f"both sides ran the same frozen workload: {fields or 'every part'} match",
                tone="good",
                brief=True,
            )
        )
    else:
        differ = ", ".join(fair.differing_fields) or "some fingerprint parts"
        parts.append(
            Sentence(
                text=f"the sides ran different workloads: {differ} differ, each allowed by name",
                tone="warn",
                brief=True,
            )
        )
        parts.append(_contract_table(v))
    source = stack.repository(v)
    if source is not None:
        parts.append(source)
    if not contract.holds:
        parts.append(Sentence(text=f"the contract does not hold: {contract.note}", tone="bad"))
    if contract.may_differ:
        parts.append(
            Sentence(
                text="settings that may differ between the sides: "
                + ", ".join(contract.may_differ),
                tone="muted",
            )
        )
    return Section(key="fairness", title="Fairness", result="INFO", parts=tuple(parts))


def _contract_table(v: Verdict) -> Part:
    rows = [
        Row(
            cells=(
                r.field,
                fmt.number(r.baseline),
                fmt.number(r.target),
                "yes" if r.matches else "no",
                r.allowed or ("-" if r.matches else "not allowed"),
            ),
            highlight=not r.matches,
        )
        for r in v.contract.must_match
    ]
    return table(
        [
            ("fingerprint part", "text"),
            ("baseline", "text"),
            ("target", "text"),
            ("same", "text"),
            ("allowed because", "text"),
        ],
        rows,
        title="What must match",
    )


def _json(value: Json) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def differences(v: Verdict, package_rows: int | None = stack.PACKAGE_ROWS) -> Section | None:
    """Settings the sides were asked to run differently, environments that differ, the
    packages that differ (at most ``package_rows``; None: all) and pinned versions."""
    parts: list[Part] = []
    if v.config_differences:
        parts.append(
            table(
                [("setting", "text"), ("baseline", "text"), ("target", "text")],
                [(d.setting, d.baseline, d.target) for d in v.config_differences],
                title="Configuration changes",
                brief=True,
            )
        )
    settings = [d for d in v.environment_differences if d.package is None]
    if settings:
        parts.append(
            table(
                [("environment", "text"), ("baseline", "text"), ("target", "text")],
                [(d.field, _json(d.baseline), _json(d.target)) for d in settings],
                title="Environment differences",
                brief=True,
            )
        )
    parts += stack.packages(v, package_rows)
    parts += stack.pins(v)
    if not parts:
        return None
    return Section(
        key="differences", title="Differences between the sides", result="INFO", parts=tuple(parts)
    )


def unproven(v: Verdict) -> Section | None:
    """What this comparison does not show, how to check it, and the operational questions."""
    parts: list[Part] = []
    if v.unproven:
        parts.append(
            table(
                [("item", "text"), ("status", "text"), ("evidence, or how to check", "text")],
                [
                    (u.item, "checked", words.unproven_evidence(u) or "-")
                    if u.checked
                    else (u.item, "open", words.unproven_how(u))
                    for u in v.unproven
                ],
                title="Not proven by this comparison",
            )
        )
    answered = [(o.item, o.answer or "-") for o in v.operational if o.answered]
    if answered:
        parts.append(
            table([("question", "text"), ("answer", "text")], answered, title="Operations")
        )
    open_items = [o.item for o in v.operational if not o.answered]
    if open_items:
        parts.append(
            Sentence(
                text="operational questions not answered: " + ", ".join(open_items), tone="muted"
            )
        )
    if not parts:
        return None
    return Section(key="unproven", title="Not yet proven", result="INFO", parts=tuple(parts))
