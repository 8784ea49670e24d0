"""What the commands print: verdicts, bundles, check results, scaling, plain tables.

``show_verdict`` is the one place a verdict reaches the terminal. Until ``parity.report``
renders a typed ``Verdict`` (the report branch), it prints the headline, the gates and
the verdict's JSON; the merge replaces its body with a call to the terminal renderer.
JSON output goes to stdout unwrapped; tables fit the terminal unless ``--wide``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from parity.cli import common as c

if TYPE_CHECKING:
    from rich.console import Console

    from parity.api import CompareResult
    from parity.bundle import Bundle
    from parity.model.checks import CheckResult
    from parity.model.reports import ScalingReport
    from parity.model.verdict import Verdict


def mark(passed: bool | None) -> str:
    """One vocabulary for results: PASS, FAIL, and INFO for what is reported, not gated."""
    return "INFO" if passed is None else "PASS" if passed else "FAIL"


def show_verdict(verdict: Verdict, console: Console, *, as_json: bool, wide: bool) -> None:
    """A verdict: its JSON, or the terminal report (for now the headline, the gates and
    the JSON; ``wide`` will reach the report's tables)."""
    from parity.model.codec import dumps

    if as_json:
        c.write_out(dumps(verdict))
        return
    w, sides = verdict.workload, verdict.sides
    console.print(
        f"parity verdict: {w.name} ({w.size}, {w.kind}): "
        f"{sides.baseline.spec} -> {sides.target.spec}",
        markup=False,
        soft_wrap=True,
    )
    for gate in verdict.gates:
        console.print(f"  {mark(gate.passed)}  {gate.name}: {gate.detail}", markup=False)
    console.print(dumps(verdict), markup=False, soft_wrap=True)
    console.print(
        "PASS: the target passes every gate"
        if verdict.passed
        else "FAIL: the target fails a gate (exit code 1)",
        markup=False,
    )


def show_result(result: CompareResult, *, as_json: bool, wide: bool) -> None:
    """A comparison: the verdict, where the bundles are, where the report is."""
    console = c.stdout(wide)
    show_verdict(result.verdict, console, as_json=as_json, wide=wide)
    where = f"bundles and verdict.json in {result.out}"
    if result.report is not None:
        where += f"; report: {result.report}"
    if as_json:
        c.note(where)
    else:
        console.print(where, markup=False, soft_wrap=True)


def show_curve(out: Path, results: Sequence[CompareResult], *, as_json: bool, wide: bool) -> None:
    """A throughput-latency curve: each batch size's verdict, then where curve.json is."""
    import json

    from parity.api import CURVE_FILE
    from parity.bundle import read_doc
    from parity.model.codec import encode
    from parity.model.reports import Curve

    if as_json:
        curve = encode(read_doc(out / CURVE_FILE, Curve))
        verdicts = [encode(r.verdict) for r in results]
        c.write_out(json.dumps({"curve": curve, "verdicts": verdicts}, indent=2))
        return
    console = c.stdout(wide)
    for r in results:
        show_verdict(r.verdict, console, as_json=False, wide=wide)
    console.print(f"bundles, verdicts and curve.json in {out}", markup=False, soft_wrap=True)


def show_run(bundle: Bundle) -> None:
    """``parity run``: the median steady step and where the bundle is."""
    median = bundle.metrics.median_step_s if bundle.metrics is not None else None
    shown = "-" if median is None else f"{median:.4g} s"
    c.stdout().print(
        f"{bundle.side}: median steady step {shown}; bundle {bundle.path}",
        markup=False,
        soft_wrap=True,
    )


def show_scan(bundle: Bundle, *, as_json: bool, wide: bool) -> tuple[int, int]:
    """``parity scan``: ops.json (JSON) or its summary; returns (unsupported, fallbacks)."""
    import json

    from parity.model.codec import encode

    ops = bundle.ops
    summary = ops.summary if ops is not None else None
    found = (summary.unsupported, summary.fallbacks) if summary is not None else (0, 0)
    if as_json:
        head = {"bundle": str(bundle.path), "status": bundle.status}
        body = encode(ops) if ops is not None else {}
        doc = {**head, "reason": bundle.manifest.reason, **(body if isinstance(body, dict) else {})}
        c.write_out(json.dumps(doc, indent=2))
        return found
    rows = [] if summary is None else [(k, str(v)) for k, v in _flat(encode(summary))]
    table(f"scan of {bundle.side}", ("finding", "count"), rows, wide=wide)
    for op in ops.unsupported if ops is not None else ():
        c.stdout(wide).print(f"  unsupported: {op.op}", markup=False, soft_wrap=True)
    c.stdout().print(f"bundle and ops.json in {bundle.path}", markup=False, soft_wrap=True)
    return found


def _flat(data: object) -> list[tuple[str, object]]:
    if not isinstance(data, dict):
        return []
    return [(k, "-" if v is None else v) for k, v in data.items()]


def show_check(result: CheckResult, *, as_json: bool) -> None:
    """``parity check``: check.json, or the result and one line per gate."""
    from parity.model.codec import dumps

    if as_json:
        c.write_out(dumps(result))
        return
    console = c.stdout()
    console.print(f"parity check {result.check}: {mark(result.passed)}", markup=False)
    for gate in result.gates:
        detail = getattr(gate, "detail", None) or ""
        console.print(f"  {mark(gate.passed)}  {gate.name}: {detail}", markup=False)
    console.print(f"evidence: {result.evidence}", markup=False, soft_wrap=True)


def show_scaling(report: ScalingReport, *, as_json: bool, wide: bool) -> None:
    """``parity scale``: scaling.json, or one row per process count."""
    from parity.model.codec import dumps

    if as_json:
        c.write_out(dumps(report))
        return
    rows = [
        (
            str(p.nproc),
            p.status,
            _fmt(p.median_step_s, " s"),
            _fmt(p.samples_per_s, ""),
            _fmt(p.speedup, "x"),
            _pct(p.efficiency),
            _pct(p.allreduce_share),
        )
        for p in report.points
    ]
    columns = ("nproc", "status", "median step", "samples/s", "speedup", "efficiency")
    table(f"scaling {report.workload} on {report.side}", (*columns, "all-reduce"), rows, wide=wide)
    for p in report.points:
        if p.status != "ok":
            c.note(f"nproc={p.nproc} failed: {p.reason}")
    if report.loss_curves is not None:
        lc = report.loss_curves
        gate = "within the gate" if lc.passed else "OUTSIDE the gate"
        c.stdout().print(f"loss curves {lc.baseline} vs {lc.target}: {gate}", markup=False)
    c.stdout().print(report.definition, markup=False, soft_wrap=True)


def _fmt(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.4g}{unit}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    wide: bool,
    console: Console | None = None,
) -> None:
    """A plain table: wrapped at spaces to fit the terminal, or full width (``wide``)."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=Text(title), title_justify="left")
    for col in columns:
        t.add_column(Text(col), overflow="fold")
    for row in rows:
        t.add_row(*(Text(cell) for cell in row))
    (console or c.stdout(wide)).print(t)
