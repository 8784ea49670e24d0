"""The view as one self-contained HTML file that works offline.

Every section of the view becomes a card with its heading, result word, sentences and
tables, and the plots that belong to it (inline SVG from ``parity.report.plots``, which
needs matplotlib, the ``report`` extra; the rest of this module does not). Nothing
refers outside the file: styles are inline, there is no script, and the text ``http``
never appears literally (a URL in, say, a stderr tail is written with an entity, which
reads the same). Long tables scroll inside their card, the name column fixed, so the
page itself never scrolls sideways.
"""

from __future__ import annotations

import html
import re
import time
from typing import TYPE_CHECKING

from parity.printable import printable
from parity.report.fmt import Result
from parity.report.parts import Section, Sentence, Table, View
from parity.report.screen import Screen, build_screen
from parity.report.view import build_view
from parity.version import __version__

if TYPE_CHECKING:
    from parity.report.svg import Plot
    from parity.report.view import Run

#: a table with more rows than this gets a height of its own and scrolls inside its card
TALL = 20

CSS = """
:root { --pass: #1e7b34; --fail: #b3261e; --info: #2f6690; --held: #8a5a00; --muted: #666;
  --line: #ddd; --card: #fff; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  margin: 0; color: #1d1d1f; background: #fafafa; }
main { max-width: 1120px; margin: 0 auto; padding: 16px 24px 48px; }
header.banner { padding: 18px 24px; color: #fff; overflow-wrap: anywhere; }
header.banner.pass { background: var(--pass); }
header.banner.fail { background: var(--fail); }
header.banner h1 { margin: 0 0 4px; font-size: 22px; }
header.banner p { margin: 0; opacity: .92; }
nav { margin: 12px 0 4px; font-size: 13px; display: flex; flex-wrap: wrap; gap: 4px 12px; }
nav a { color: var(--info); text-decoration: none; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 18px 16px; margin: 14px 0; min-width: 0; }
section h2 { margin: 4px 0 10px; font-size: 18px; display: inline; }
summary { cursor: pointer; margin: 4px 0 10px; }
.summary { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 18px 16px; margin: 14px 0; }
.summary th { color: #1d1d1f; }
h3 { font-size: 15px; margin: 14px 0 6px; }
p { margin: 6px 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; margin: 6px 0 4px; }
.scroll.tall { max-height: 32em; overflow-y: auto; }
table { border-collapse: separate; border-spacing: 0; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 12px 4px 0; text-align: left;
  vertical-align: top; background: var(--card); }
th { color: var(--muted); font-weight: 600; }
.tall thead th { position: sticky; top: 0; z-index: 1; }
th:first-child, td:first-child { position: sticky; left: 0; z-index: 2; white-space: nowrap;
  padding-left: 2px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.wrap { min-width: 14em; }
tr.hl td { font-weight: 600; background: #fdf1f0; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px;
  font-weight: 700; color: #fff; vertical-align: middle; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.badge.info { background: var(--info); } .badge.withheld { background: var(--held); }
.badge.not-decided { background: var(--held); }
.muted, .legend { color: var(--muted); }
.legend { font-size: 12px; margin-top: 2px; }
.warn { color: var(--held); }
.bad { color: var(--fail); font-weight: 600; }
.good { color: var(--pass); }
.strong { font-weight: 700; }
pre { background: #f4f4f4; padding: 8px; overflow: auto; font-size: 12px; max-height: 320px; }
figure.plot { margin: 10px 0 16px; }
figure.plot svg { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: var(--muted); margin-top: 4px; }
footer { color: var(--muted); font-size: 12px; margin-top: 24px; overflow-wrap: anywhere; }
"""


def esc(value: object) -> str:
    """HTML-escaped text in which ``http`` never appears literally and control characters
    are visible (``parity.printable``)."""
    text = html.escape(printable(value), quote=True)
    return re.sub(r"(?i)(h)(t)(tp)", lambda m: f"{m[1]}&#{ord(m[2])};{m[3]}", text)


def anchor(key: str) -> str:
    return "sec-" + re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def badge(result: Result | str) -> str:
    return f'<span class="badge {esc(result.lower().replace(" ", "-"))}">{esc(result)}</span>'


def figure(plot: Plot | None) -> str:
    if plot is None:
        return ""
    return (
        f'<figure class="plot" id="plot-{plot.key}" data-plot="{plot.key}" '
        f'data-points="{plot.points}">{plot.svg}'
        f"<figcaption><b>{esc(plot.title)}.</b> {esc(plot.caption)}</figcaption></figure>"
    )


def sentence_html(s: Sentence) -> str:
    if s.verbatim:
        return f"<pre>{esc(s.text)}</pre>"
    lead = f"{badge(s.result)} " if s.result else ""
    return f'<p class="{s.tone}">{lead}{esc(s.text)}</p>'


def table_html(t: Table) -> str:
    def cell(tag: str, text: str, kind: str) -> str:
        if kind == "result" and tag == "td":
            return f"<td>{badge(text)}</td>"
        cls = {"number": "num", "text": "wrap" if len(text) > 40 else ""}.get(kind, "")
        attr = f' class="{cls}"' if cls else ""
        return f"<{tag}{attr}>{esc(text)}</{tag}>"

    head = "".join(cell("th", c.header, c.kind) for c in t.columns)
    body = "".join(
        ('<tr class="hl">' if row.highlight else "<tr>")
        + "".join(cell("td", x, c.kind) for x, c in zip(row.cells, t.columns, strict=True))
        + "</tr>"
        for row in t.rows
    )
    title = f"<h3>{esc(t.title)}</h3>" if t.title else ""
    tall = " tall" if len(t.rows) > TALL else ""
    legend = f'<p class="legend">{esc(t.legend)}</p>' if t.legend else ""
    return (
        f'{title}<div class="scroll{tall}"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{legend}"
    )


def section_html(section: Section, made: dict[str, Plot], *, collapsed: bool = False) -> str:
    """A section's card; ``collapsed``: its detail in a ``<details>`` that its heading
    opens (the report leads with the screen)."""
    parts = "".join(
        table_html(p) if isinstance(p, Table) else sentence_html(p) for p in section.parts
    )
    figures = "".join(figure(made.get(key)) for key in section.plots)
    heading = f"<h2>{esc(section.title)} {badge(section.result)}</h2>"
    inner = (
        f"<details><summary>{heading}</summary>{parts}{figures}</details>"
        if collapsed
        else f"{heading}{parts}{figures}"
    )
    return (
        f'<section id="{anchor(section.key)}" data-section="{esc(section.key)}">{inner}</section>'
    )


def screen_html(screen: Screen) -> str:
    """The screen as the report's first card: a row each for quality, speed, memory and
    cost, then the findings that change the reading, each with its action."""
    rows = "".join(
        f"<tr><th>{esc(r.label)}</th><td>{badge(r.result) if r.result else ''}</td>"
        f'<td class="wrap">{esc(r.text)}</td></tr>'
        for r in screen.rows
    )
    found = "".join(
        f'<li class="warn">{esc(said)}'
        + (f'<br><span class="muted">→ {esc(action)}</span>' if action else "")
        + "</li>"
        for said, action in screen.findings
    )
    listed = f"<h3>What changes the reading</h3><ul>{found}</ul>" if found else ""
    return (
        '<div class="summary" id="summary"><div class="scroll"><table><tbody>'
        f"{rows}</tbody></table></div>{listed}"
        '<p class="legend">Every section in full below (open a heading).</p></div>'
    )


def format_html(
    view: View, made: dict[str, Plot], *, source: str, screen: Screen | None = None
) -> str:
    """The whole document for a view and its plots; ``source`` names where it came from;
    ``screen``: the summary it leads with, every section then collapsed."""
    nav = "".join(f'<a href="#{anchor(s.key)}">{esc(s.title)}</a>' for s in view.sections)
    notes = "".join(f'<p class="warn">{esc(x)}</p>' for x in view.notes)
    collapsed = screen is not None
    lead = screen_html(screen) if screen is not None else ""
    body = lead + "".join(section_html(s, made, collapsed=collapsed) for s in view.sections)
    title = screen.decision if screen is not None else view.title
    kind = "pass" if view.result == "PASS" else "fail"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>parity: {esc(view.subtitle)}</title><style>{CSS}</style></head><body>"
        f'<header class="banner {kind}"><h1>{esc(title)}</h1><p>{esc(view.subtitle)}</p>'
        f"</header><main><nav>{nav}</nav>{notes}{body}"
        f"<footer>Written by parity {esc(__version__)} from {esc(source)} on {esc(stamp)}. "
        "Self-contained: no scripts, fonts or images are fetched.</footer></main></body></html>\n"
    )


def render_html(run: Run) -> str:
    """The whole report of a comparison as one HTML document (every module's row).
    Needs matplotlib (the ``report`` extra) for the plots: ImportError without it."""
    from parity.report import plots

    problems = list(run.problems)
    made = plots.all_plots(run.verdict, run.sides, problems)
    view = build_view(
        run.verdict, sides=run.sides, notes=tuple(problems), layer_rows=None, package_rows=None
    )
    return format_html(view, made, source=str(run.path), screen=build_screen(run.verdict))
