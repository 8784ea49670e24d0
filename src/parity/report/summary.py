"""How the Python API's result objects show themselves: ``repr`` and a notebook's
``_repr_html_``. A comparison shows the verdict line, the speed ratio with its interval
and the quality gates, taken from the same view as every other report; a single run
shows its side, status, median step and bundle."""

from __future__ import annotations

from pathlib import Path

from parity.bundle import Bundle
from parity.model.verdict import Verdict
from parity.report import fmt
from parity.report.html import esc, section_html
from parity.report.layout import Line
from parity.report.parts import Section, View
from parity.report.terminal import view_lines
from parity.report.view import build_view

#: the sections a result object shows (the brief parts of each)
SUMMARY = ("gates", "quality", "speed")
WIDTH = 100
STYLE = (
    "<style>.parity-result .badge{display:inline-block;padding:0 6px;border-radius:8px;"
    "color:#fff;font-size:11px;font-weight:700}.parity-result .pass{background:#1e7b34}"
    ".parity-result .fail{background:#b3261e}.parity-result .info{background:#2f6690}"
    ".parity-result .withheld{background:#8a5a00}.parity-result td,.parity-result th"
    "{text-align:left;padding:2px 10px 2px 0}.parity-result .legend{color:#666;"
    "font-size:11px}</style>"
)


def brief_view(verdict: Verdict) -> View:
    """The view cut to the gates, quality and speed, each to its brief parts."""
    view = build_view(verdict)
    sections = []
    for key in SUMMARY:
        section = view.section(key)
        if section is None:
            continue
        parts = tuple(p for p in section.parts if p.brief)
        if parts:
            sections.append(
                Section(key=key, title=section.title, result=section.result, parts=parts)
            )
    return View(
        title=view.title, result=view.result, subtitle=view.subtitle, sections=tuple(sections)
    )


def _text(lines: list[Line]) -> str:
    return "\n".join("".join(text for text, _ in line) for line in lines)


def summary_text(verdict: Verdict, *, out: Path | None = None) -> str:
    """Plain text, at most ``WIDTH`` columns: what ``repr`` of a comparison shows."""
    text = _text(view_lines(brief_view(verdict), WIDTH, plain=True))
    return text + (f"\nbundles: {out}" if out is not None else "")


def summary_html(verdict: Verdict, *, out: Path | None = None) -> str:
    """An HTML fragment for a notebook (no plots, no matplotlib needed)."""
    view = brief_view(verdict)
    color = "#1e7b34" if view.result == "PASS" else "#b3261e"
    body = "".join(section_html(s, {}) for s in view.sections)
    where = f"<p>bundles: <code>{esc(out)}</code></p>" if out is not None else ""
    return (
        f'<div class="parity-result">{STYLE}<p><b style="color:{color}">{esc(view.title)}</b>'
        f"<br>{esc(view.subtitle)}</p>{body}{where}</div>"
    )


def _run_facts(bundle: Bundle) -> list[tuple[str, str]]:
    m = bundle.metrics
    facts = [("side", str(bundle.side)), ("status", bundle.status)]
    if not bundle.ok:
        facts.append(("reason", str(bundle.manifest.reason)))
    if m is not None:
        facts += [
            ("median step (steady)", fmt.seconds(m.median_step_s)),
            ("first step", fmt.seconds(m.phases.first_step_s)),
            ("load", fmt.seconds(m.phases.load_s)),
            ("steps", str(len(m.step_samples_s))),
        ]
        if m.input_pipeline is not None:
            facts.append(("input pipeline", m.input_pipeline.reason))
    facts.append(("bundle", str(bundle.path)))
    return facts


def run_text(bundle: Bundle) -> str:
    """What ``repr`` of a single run shows."""
    return "<RunResult " + "; ".join(f"{k} {v}" for k, v in _run_facts(bundle)) + ">"


def run_html(bundle: Bundle) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in _run_facts(bundle))
    return f'<div class="parity-run">{STYLE}<table>{rows}</table></div>'
