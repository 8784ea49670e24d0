"""The view as Markdown for a pull-request comment: at most ``MAX_LINES`` lines.

It leads with the verdict's screen (``parity.report.screen``: the decision with the speed
word and the cost answer, a line each for quality, speed, memory and cost, the findings
that change the reading); then only the parts the view marks ``brief``, the figures a
reviewer asks for. A long table keeps its first rows and says how many it left out; a
section that no longer fits is named in one line that points to the HTML report.
"""

from __future__ import annotations

from parity.model.verdict import Verdict
from parity.report.parts import Section, Sentence, Table, View
from parity.report.screen import Screen, build_screen
from parity.report.view import Sides, build_view

MAX_LINES = 60
MAX_ROWS = 8


def cell(value: str) -> str:
    """Text safe inside a Markdown table cell: one line, no bare pipes."""
    return " ".join(value.split()).replace("|", "\\|")


def word(result: str) -> str:
    return result if result in ("PASS", "INFO") else f"**{result}**"


def render_markdown(
    verdict: Verdict, *, sides: Sides | None = None, html_name: str | None = None
) -> str:
    """The verdict's summary for a pull-request comment (``html_name``: the full report)."""
    view = build_view(verdict, sides=sides)
    return format_markdown(view, html_name=html_name, screen=build_screen(verdict))


def screen_markdown(screen: Screen) -> list[str]:
    """The screen's lines: a row each for quality, speed, memory, cost; the findings."""
    lines = ["| | result | |", "|---|---|---|"]
    lines += [f"| {r.label} | {word(r.result or '')} | {cell(r.text)} |" for r in screen.rows]
    for said, action in screen.findings:
        lines.append(f"- {cell(said)}" + (f" → {cell(action)}" if action else ""))
    return lines


def format_markdown(
    view: View, *, html_name: str | None = None, screen: Screen | None = None
) -> str:
    title = screen.decision if screen is not None else view.title
    lines = [f"### parity: {cell(title)}", "", cell(view.subtitle)]
    lines += [f"> {cell(n)}" for n in view.notes]
    if screen is not None:
        lines += ["", *screen_markdown(screen)]
    where = f"`{html_name}`" if html_name else "the HTML report (`parity report`)"
    footer = ["", f"<sub>parity · full report with plots: {where}</sub>"]
    left: list[str] = []
    for section in view.sections:
        body = section_markdown(section)
        if not body:
            left.append(section.title)
            continue
        room = MAX_LINES - len(lines) - len(footer) - 2  # 2: the "also in the report" line
        if len(body) + 1 > room:
            left.append(section.title)
            continue
        lines += ["", *body]
    if left:
        lines += ["", f"**Also in the report**: {', '.join(left)}"]
    lines += footer
    if len(lines) > MAX_LINES:  # a headline or notes too long to fit with anything else
        lines = [*lines[: MAX_LINES - 1], "<sub>cut to fit a comment; see verdict.json</sub>"]
    return "\n".join(lines) + "\n"


def section_markdown(section: Section) -> list[str]:
    """The section's brief parts, under a heading with its result word; [] if none."""
    body: list[str] = []
    for part in section.parts:
        if isinstance(part, Table):
            if part.brief:
                body += table_markdown(part)
        elif part.brief:
            body.append(sentence_markdown(part))
    if not body:
        return []
    return [f"#### {cell(section.title)}: {word(section.result)}", *body]


def sentence_markdown(s: Sentence) -> str:
    lead = f"{word(s.result)} " if s.result else ""
    text = cell(s.text)
    return f"- {lead}**{text}**" if s.tone == "strong" else f"- {lead}{text}"


def table_markdown(t: Table) -> list[str]:
    out = [f"**{cell(t.title)}**"] if t.title else []
    out.append("| " + " | ".join(cell(c.header) for c in t.columns) + " |")
    out.append("|" + "|".join("---:" if c.right else "---" for c in t.columns) + "|")
    rows = list(t.rows)
    shown = rows if len(rows) <= MAX_ROWS else rows[: MAX_ROWS - 1]
    for row in shown:
        cells = [
            word(x) if c.kind == "result" else cell(x)
            for x, c in zip(row.cells, t.columns, strict=True)
        ]
        out.append("| " + " | ".join(cells) + " |")
    if len(shown) < len(rows):
        more = [f"... and {len(rows) - len(shown)} more", *[""] * (len(t.columns) - 1)]
        out.append("| " + " | ".join(more) + " |")
    if t.legend:
        out.append(f"<sub>{cell(t.legend)}</sub>")
    return out
