"""What the commands print: verdicts, curves, bundles, scans, check results, scaling and
plain tables, through ``parity.report``'s view and width-aware layout.

``show_verdict`` is the one place a verdict reaches the terminal. JSON goes to stdout as
it is; everything else fits the terminal's width (plain aligned text when stdout is not
a terminal), or its natural width with ``--wide``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from parity.cli import common as c

if TYPE_CHECKING:
    from rich.console import Console

    from parity.api import ComparisonResult
    from parity.model.bundle import Bundle
    from parity.model.checks import CheckResult
    from parity.model.reports import ScalingReport
    from parity.model.verdict import Verdict
    from parity.report.decision import Sides
    from parity.report.parts import ColumnKind


def mark(passed: bool | None) -> str:
    """One vocabulary for results: PASS, FAIL, and INFO for what is reported, not gated."""
    return "INFO" if passed is None else "PASS" if passed else "FAIL"


def show_verdict(
    verdict: Verdict,
    console: Console,
    *,
    as_json: bool,
    wide: bool,
    sides: Sides | None = None,
    verbose: bool = False,
    out: Path | str | None = None,
    report: Path | str | None = None,
) -> None:
    """A verdict: its JSON, or its screen (``verbose``: every section in full; ``sides``:
    the bundles behind it; ``out``: where the comparison is)."""
    if as_json:
        from parity.model.codec import dumps

        c.write_out(dumps(verdict))
        return
    from parity.report.terminal import render_terminal

    render_terminal(
        verdict, console, sides=sides, wide=wide, verbose=verbose, out=out, report=report
    )


def _sides(result: ComparisonResult) -> Sides:
    return result.comparison.sides


def show_result(
    result: ComparisonResult, *, as_json: bool, wide: bool, verbose: bool = False
) -> None:
    """A comparison: the verdict, where the bundles are, where the report is."""
    console = c.stdout()
    # where it was published, not its local staging copy
    report: Path | str | None = result.report
    if result.report is not None and result.url:
        report = f"{result.url}/{result.report.name}"
    show_verdict(
        result.verdict,
        console,
        as_json=as_json,
        wide=wide,
        sides=_sides(result),
        verbose=verbose,
        out=result.url or result.out,
        report=report,
    )
    where = f"bundles and verdict.json in {result.url or result.out}"
    if report is not None:
        where += f"; report: {report}"
    if as_json:
        c.note(where)
    elif verbose:  # the screen says where the rest is
        console.print(where, markup=False, soft_wrap=True)


def show_curve(
    out: Path, results: Sequence[ComparisonResult], *, as_json: bool, wide: bool
) -> None:
    """A throughput-latency curve: each batch size's verdict, the curve, where it is."""
    import json

    from parity.bundle import CURVE, read_doc
    from parity.model.codec import encode
    from parity.model.reports import Curve

    curve = read_doc(out / CURVE, Curve)
    if as_json:
        verdicts = [encode(r.verdict) for r in results]
        c.write_out(json.dumps({"curve": encode(curve), "verdicts": verdicts}, indent=2))
        return
    from parity.report.curve import render_curve

    console = c.stdout()
    for r in results:
        show_verdict(r.verdict, console, as_json=False, wide=wide, sides=_sides(r))
        console.print()
    points = list(zip(curve.batch_sizes, (r.verdict for r in results), strict=True))
    render_curve(points, console, wide=wide)
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
    fed = bundle.metrics.input_pipeline if bundle.metrics is not None else None
    if fed is not None:
        c.stdout().print(f"{bundle.side}: {fed.reason}", markup=False, soft_wrap=True)


def show_scan(bundle: Bundle, *, as_json: bool, wide: bool) -> tuple[int, int]:
    """``parity scan``: ops.json (JSON) or what it found; returns (unsupported, fallbacks)."""
    import json

    from parity.model.codec import encode

    ops = bundle.ops
    summary = ops.summary if ops is not None else None
    found = (summary.unsupported, summary.fallbacks) if summary is not None else (0, 0)
    if as_json:
        body = encode(ops) if ops is not None else {}
        doc = {
            "bundle": str(bundle.path),
            "status": bundle.status,
            "reason": bundle.manifest.reason,
        }
        c.write_out(json.dumps({**doc, **(body if isinstance(body, dict) else {})}, indent=2))
        return found
    console = c.stdout()
    if ops is not None:
        from parity.report.ops import render_scan

        render_scan(ops, console, wide=wide)
    console.print(f"bundle and ops.json in {bundle.path}", markup=False, soft_wrap=True)
    return found


def show_check(result: CheckResult, *, as_json: bool) -> None:
    """``parity check``: check.json, or the result and one line per gate."""
    from parity.model.checks import SlopeGate
    from parity.model.codec import dumps
    from parity.report import words

    if as_json:
        c.write_out(dumps(result))
        return
    console = c.stdout()
    word = "INCONCLUSIVE" if result.conclusive is False else mark(result.passed)
    console.print(f"parity check {result.check}: {word}", markup=False)
    for gate in result.gates:
        detail = (words.slope(gate) if isinstance(gate, SlopeGate) else gate.detail) or ""
        figure = getattr(gate, "figure", None)
        said = (
            "INCONCLUSIVE"
            if gate.passed and getattr(figure, "conclusive", None) is False
            else mark(gate.passed)
        )
        console.print(f"  {said}  {gate.name}: {detail}", markup=False)
    console.print(f"evidence: {result.evidence}", markup=False, soft_wrap=True)


def show_scaling(report: ScalingReport, *, as_json: bool, wide: bool) -> None:
    """``parity scale``: scaling.json, or one row per process count."""
    from parity.model.codec import dumps

    if as_json:
        c.write_out(dumps(report))
        return
    rows = [
        (str(p.nproc), p.status, _fmt(p.median_step_s, " s"), _fmt(p.samples_per_s, ""), *rest)
        for p in report.points
        for rest in [(_fmt(p.speedup, "x"), _pct(p.efficiency), _pct(p.allreduce_share))]
    ]
    columns = ("nproc", "status", "median step", "samples/s", "speedup", "efficiency")
    kinds: list[ColumnKind] = ["number", "result", "number", "number", "number", "number"]
    table(
        f"scaling {report.workload} on {report.side}",
        list(zip((*columns, "all-reduce"), (*kinds, "number"), strict=True)),
        rows,
        wide=wide,
        legend=report.definition,
    )
    for p in report.points:
        if p.status != "ok":
            c.note(f"nproc={p.nproc} failed: {p.reason}")
    if report.loss_curves is not None:
        lc = report.loss_curves
        gate = "within the gate" if lc.passed else "OUTSIDE the gate"
        c.stdout().print(f"loss curves {lc.baseline} vs {lc.target}: {gate}", markup=False)


def _fmt(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.4g}{unit}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def table(
    title: str,
    columns: Sequence[tuple[str, ColumnKind]],
    rows: Sequence[tuple[str, ...]],
    *,
    wide: bool,
    legend: str | None = None,
) -> None:
    """A table in the report's layout: fits the terminal (wrapping at spaces, names
    shortened in the middle), plain when piped, natural width with ``wide``."""
    from parity.report.parts import Section
    from parity.report.parts import table as make_table
    from parity.report.terminal import print_sections

    made = make_table(columns, rows, legend=legend)
    section = Section(key="table", title=title, result="INFO", parts=(made,))
    print_sections([section], c.stdout(), wide=wide)
