"""The view's fair-comparison sections: tuning asymmetry, the workload's shape against
production, fit at production size, and the latency limits' gate.

Each reads its typed verdict section and returns a ``Section`` (None when the verdict
has none); the tuning label is also said in the speed section (``tuning_label``).
"""

from __future__ import annotations

from dataclasses import replace

from parity.model.fair import SideFit, SloCheck
from parity.model.verdict import Verdict
from parity.report import fmt, words
from parity.report.fmt import Result
from parity.report.parts import Part, Row, Section, Sentence, Tone, table


def tuning_label(v: Verdict) -> list[Part]:
    """The label every speed figure over asymmetric tuning carries (or the reason the
    asymmetry is intended)."""
    t = v.tuning
    if t is None or not t.asymmetric:
        return []
    if t.label is not None:
        return [Sentence(text=words.says(t.label), tone="bad", brief=True)]
    return [
        Sentence(
            text=f"the sides are tuned differently on purpose: {t.intended}",
            tone="warn",
            brief=True,
        )
    ]


def tuning(v: Verdict) -> Section | None:
    t = v.tuning
    if t is None:
        return None
    parts: list[Part] = []
    if not t.asymmetric:
        parts.append(Sentence(text="tuned alike: no speed setting on one side only", tone="good"))
    else:
        # said briefly in the speed section, beside the ratio
        parts += [replace(p, brief=False) for p in tuning_label(v)]
        parts.append(
            table(
                [
                    ("optimisation", "text"),
                    ("baseline", "text"),
                    ("target", "text"),
                    ("on", "text"),
                    ("effect on target/baseline", "text"),
                ],
                [
                    (
                        words.setting(o.setting),
                        o.baseline,
                        o.target,
                        o.side or "both, differently",
                        words.bias(o),
                    )
                    for o in t.optimisations
                ],
                title="Tuning asymmetry",
            )
        )
    parts.append(Sentence(text=f"read {words.method(t.method)}", tone="muted"))
    result: Result = "INFO"
    return Section(key="tuning", title="Tuning", result=result, parts=tuple(parts))


def shape(v: Verdict) -> Section | None:
    r = v.representativeness
    if r is None:
        return None
    tone: Tone = "good" if r.representative else "warn"
    parts: list[Part] = [Sentence(text=words.shape(r), tone=tone, brief=r.declared)]
    if r.declared:
        parts.append(
            table(
                [("", "text"), ("measured", "number"), ("production", "number"), ("", "text")],
                [
                    Row(
                        cells=(x.name, x.measured, x.production or fmt.DASH, words.shape_row(x)),
                        highlight=x.within is False,
                    )
                    for x in r.rows
                ],
                title="Measured shape against production",
                legend=f"representative: every declared size within {r.factor:g}x of "
                "production, precision and optimizer the same, the data pipeline measured",
            )
        )
    result: Result = "PASS" if r.representative else "INFO"
    return Section(key="shape", title="Workload shape", result=result, parts=tuple(parts))


def _fit_rows(a: SideFit, b: SideFit) -> list[tuple[str, ...]]:
    names = list(dict.fromkeys([p.name for p in a.parts] + [p.name for p in b.parts]))
    rows: list[tuple[str, ...]] = []
    for name in names:
        pa = next((p for p in a.parts if p.name == name), None)
        pb = next((p for p in b.parts if p.name == name), None)
        part = pa if pa is not None else pb
        assert part is not None
        label = f"{name} (parity's run only)" if part.parity_only else name
        rows.append(
            (
                label,
                fmt.nbytes(pa.bytes if pa else None),
                fmt.nbytes(pb.bytes if pb else None),
                words.part_how(part),
            )
        )
    rows.append(("projected peak", fmt.nbytes(a.peak_bytes), fmt.nbytes(b.peak_bytes), ""))
    rows.append(
        (
            "device memory",
            fmt.nbytes(a.memory.bytes if a.memory else None),
            fmt.nbytes(b.memory.bytes if b.memory else None),
            "; ".join(
                f"{role}: {m.source}"
                for role, m in (("baseline", a.memory), ("target", b.memory))
                if m is not None
            ),
        )
    )
    return rows


def fit(v: Verdict) -> Section | None:
    f = v.fit
    if f is None:
        return None
    if not f.available or f.sides is None:
        parts: list[Part] = [
            Sentence(text=f"fit not projected: {words.fit_reason(f)}", tone="warn")
        ]
        return Section(key="fit", title="Fit at production size", result="INFO", parts=tuple(parts))
    a, b = f.sides.baseline, f.sides.target
    parts = [
        Sentence(text=f"{role}: {words.fit(s)}", tone=_tone(s.fits), brief=True)
        for role, s in f.sides.items()
    ]
    parts.append(
        table(
            [
                ("part", "text"),
                (f"baseline {v.sides.baseline.side}", "number"),
                (f"target {v.sides.target.side}", "number"),
                ("how", "text"),
            ],
            _fit_rows(a, b),
            title="Projected peak memory at production size",
        )
    )
    parts.append(Sentence(text=f"method: {words.method(f.method)}", tone="muted"))
    result = "INFO" if b.fits is None else fmt.result_of(b.fits)
    return Section(key="fit", title="Fit at production size", result=result, parts=tuple(parts))


def _tone(fits: bool | None) -> Tone:
    return "plain" if fits is None else "good" if fits else "bad"


def _cell(c: SloCheck) -> str:
    value = fmt.seconds(c.value_s) if c.value_s is not None else fmt.DASH
    return f"{value} ({c.status}, n={c.n})"


def slo(v: Verdict) -> Section | None:
    s = v.slo
    if s is None:
        return None
    rows = [
        Row(
            cells=(
                a.limit.name,
                fmt.seconds(a.limit.limit_s),
                _cell(b),
                _cell(a),
                str(b.needed),
            ),
            highlight=b.status != "pass",
        )
        for a, b in zip(s.sides.baseline.checks, s.sides.target.checks, strict=True)
    ]
    parts: list[Part] = [
        table(
            [
                ("limit", "text"),
                ("at most", "number"),
                (f"target {v.sides.target.side}", "number"),
                (f"baseline {v.sides.baseline.side}", "number"),
                ("samples needed", "number"),
            ],
            rows,
            title="Latency limits (a gate on the target; the baseline beside it)",
            brief=True,
        )
    ]
    parts += [
        Sentence(
            text=f"target {words.slo_check(c)}",
            tone="good" if c.status == "pass" else "bad",
            brief=True,
        )
        for c in s.sides.target.checks
    ]
    parts += [
        Sentence(text=f"baseline {words.slo_check(c)}", tone="muted")
        for c in s.sides.baseline.checks
    ]
    parts.append(Sentence(text=f"rule: {words.method(s.rule)}", tone="muted"))
    return Section(
        key="slo", title="Latency limits", result=fmt.result_of(s.passed), parts=tuple(parts)
    )


def mlflow_figures(v: Verdict) -> tuple[dict[str, str], dict[str, float | None]]:
    """The four rules' tags and metrics for MLflow."""
    tags: dict[str, str] = {}
    figures: dict[str, float | None] = {}
    if (t := v.tuning) is not None:
        tags["parity.tuning"] = (words.says(t.label) if t.label else None) or (
            f"asymmetric, intended: {t.intended}" if t.asymmetric else "alike"
        )
    if (r := v.representativeness) is not None:
        tags["parity.representative"] = (
            "not checked" if r.representative is None else str(r.representative).lower()
        )
        for row in r.rows:
            figures[f"shape.{row.name}.fraction"] = row.fraction
    if (f := v.fit) is not None and f.sides is not None:
        for role, side in f.sides.items():
            tags[f"parity.fit.{role}"] = words.fit(side)
            figures[f"fit.{role}.peak_bytes"] = side.peak_bytes
            figures[f"fit.{role}.margin_bytes"] = side.margin_bytes
            figures[f"fit.{role}.fsdp_devices"] = side.fsdp_devices
    if (s := v.slo) is not None:
        tags["parity.slo"] = "PASS" if s.passed else "FAIL"
        for role, slo_side in s.sides.items():
            for c in slo_side.checks:
                key = f"slo.{role}.{c.limit.name}"
                figures |= {f"{key}.value_s": c.value_s, f"{key}.upper_s": c.upper_s}
                figures |= {f"{key}.n": c.n, f"{key}.passed": float(c.status == "pass")}
    return tags, figures
