"""The view's compatibility section: what each side's op scan found, and the versions of
Python, PyTorch and the backend packages side by side."""

from __future__ import annotations

from parity.model.verdict import Compatibility, SideCompatibility, Verdict
from parity.report import fmt, words
from parity.report.parts import Part, Row, Section, Sentence, table

SCAN_HINT = "run parity scan --device SIDE for unsupported ops, fallbacks and graph breaks"


def _count(value: int | None) -> str:
    return fmt.DASH if value is None else str(value)


def _summary_row(role: str, spec: str, side: SideCompatibility) -> Row:
    if not side.scanned:
        return Row(cells=(f"{role} {spec}", "no scan", *(fmt.DASH,) * 5))
    counts = side.counts
    state = "clean" if side.clean else "findings"
    if side.after_failure:
        state += " (after it failed)"
    return Row(
        cells=(
            f"{role} {spec}",
            state,
            _count(counts.unsupported if counts else None),
            _count(counts.fallbacks if counts else None),
            _count(counts.host_syncs if counts else None),
            _count(side.graph_breaks),
            _count(counts.custom_ops if counts else None),
        ),
        highlight=not side.clean,
    )


def findings(side: SideCompatibility) -> list[tuple[str, str, str]]:
    """(finding, op, where) for everything a side's scan found."""
    out: list[tuple[str, str, str]] = []
    for c in side.custom_ops or ():
        out.append(("custom op: test it on the target first", c.op, c.where or fmt.DASH))
    for u in side.unsupported or ():
        dtypes = f" [{', '.join(u.dtypes)}]" if u.dtypes else ""
        out.append((f"unsupported{dtypes}", u.op, u.where or fmt.DASH))
    fb = side.fallbacks
    if fb is not None:
        out += [(f"CPU fallback ({fb.backend or 'backend'})", op, fmt.DASH) for op in fb.ops]
        out += [("output on another device", m.op, m.where or fmt.DASH) for m in fb.device_mismatch]
    for s in side.host_syncs or ():
        calls = f" x{s.count}" if s.count is not None else ""
        out.append((f"host sync{calls}", s.op, s.where or fmt.DASH))
    for r in side.graph_break_reasons or ():
        out.append((f"graph break: {r.reason}", fmt.DASH, r.where or fmt.DASH))
    if side.compile_device_error:
        out.append((f"torch.compile: {side.compile_device_error}", fmt.DASH, fmt.DASH))
    return out


def _versions(c: Compatibility) -> Part:
    rows = [
        Row(
            cells=(
                r.name,
                r.baseline or fmt.DASH,
                r.target or fmt.DASH,
                "one side only" if r.one_side else ("no" if r.mismatch else "yes"),
            ),
            highlight=r.mismatch,
        )
        for r in c.versions
    ]
    return table(
        [("package", "text"), ("baseline", "text"), ("target", "text"), ("same", "text")],
        rows,
        title="Versions",
    )


def compatibility(v: Verdict) -> Section:
    c = v.compatibility
    parts: list[Part] = []
    scanned = [
        (role, s) for role, s in (("baseline", c.baseline), ("target", c.target)) if s.scanned
    ]
    if not scanned:
        parts.append(
            Sentence(text=f"no op scan in either side's bundle: {SCAN_HINT}", tone="muted")
        )
    else:
        spec = {"baseline": str(v.sides.baseline.side), "target": str(v.sides.target.side)}
        parts.append(
            table(
                [
                    ("side", "text"),
                    ("scan", "text"),
                    ("unsupported", "number"),
                    ("fallbacks", "number"),
                    ("host syncs", "number"),
                    ("graph breaks", "number"),
                    ("custom ops", "number"),
                ],
                [
                    _summary_row(role, spec[role], s)
                    for role, s in (("baseline", c.baseline), ("target", c.target))
                ],
                legend="counts of distinct ops; host syncs: calls inside a step",
                brief=not c.target_clean,
            )
        )
        rows = [(role, *f) for role, s in scanned for f in findings(s)]
        if rows:
            parts.append(
                table(
                    [("side", "text"), ("finding", "text"), ("op", "name"), ("where", "text")],
                    rows,
                    title="Findings",
                )
            )
        for role, s in scanned:
            if s.scan_error is not None:
                e = s.scan_error
                parts.append(
                    Sentence(
                        text=f"the {role}'s scan stopped: {e.type}: {e.message} "
                        f"at {e.where or '?'}",
                        tone="bad",
                    )
                )
    if c.versions:
        parts.append(_versions(c))
    parts.append(Sentence(text=words.method(c.method), tone="muted"))
    return Section(key="compatibility", title="Compatibility", result="INFO", parts=tuple(parts))
