"""The view on a terminal (Rich colours) or as plain aligned text (a pipe, a CI log).

Every line fits the console's width: tables shrink their columns, wrap at spaces and
dots and abbreviate module names from the middle (``parity.report.layout``); ``wide``
lays out at natural width instead (``--wide``). When the console is not a terminal the
output is plain text: no colour, no box drawing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from parity.model.verdict import Verdict
from parity.report.layout import Line, table_lines, text_lines
from parity.report.parts import Section, Sentence, Table, View
from parity.report.screen import Screen, build_screen
from parity.report.view import Sides, build_view

INDENT = 2
STYLES = {
    "title": "bold",
    "header": "bold",
    "rule": "dim",
    "muted": "dim",
    "good": "green",
    "bad": "red",
    "warn": "yellow",
    "strong": "bold",
    "highlight": "bold",
    "PASS": "bold green",
    "FAIL": "bold red",
    "NOT DECIDED": "bold magenta",
    "INFO": "cyan",
    "WITHHELD": "bold yellow",
    "ERROR": "bold red",
}


def render_terminal(
    verdict: Verdict,
    console: Console,
    *,
    sides: Sides | None = None,
    notes: tuple[str, ...] = (),
    wide: bool = False,
    verbose: bool = False,
    out: Path | str | None = None,
    report: Path | str | None = None,
) -> None:
    """Print the verdict on ``console`` at its width (``wide``: natural width): its one
    screen, or with ``verbose`` every section in full (``out``: the comparison's
    directory, named where the screen says where the rest is)."""
    if verbose:
        print_view(build_view(verdict, sides=sides, notes=notes), console, wide=wide)
        return
    width = None if wide else console.width
    screen = build_screen(verdict, out=out, report=report)
    print_lines(screen_lines(screen, width, notes=notes), console)


def screen_lines(screen: Screen, width: int | None, *, notes: tuple[str, ...] = ()) -> list[Line]:
    """The one-screen summary as lines of at most ``width``."""
    lines: list[Line] = _led(screen.decision, screen.result, width)
    lines += text_lines(screen.subtitle, width, "muted", indent=INDENT)
    for note in notes:
        lines += text_lines(note, width, "warn", indent=INDENT)
    lines.append([])
    label = max((len(r.label) for r in screen.rows), default=0) + 2
    word = max((len(r.result or "") for r in screen.rows), default=0) + 2
    for row in screen.rows:
        head = [
            (row.label.ljust(label), "title"),
            ((row.result or "").ljust(word), row.result or ""),
        ]
        lines += _hanging(head, row.text, width, "")
    if screen.findings:
        lines.append([])
        more = f"; {screen.more} more with --verbose" if screen.more else ""
        said = f"what changes the reading (most consequential first{more})"
        lines += text_lines(said, width, "title", indent=INDENT)
        for said, action in screen.findings:
            lines += _hanging([("- ", "warn")], said, width, "warn")
            if action:
                lines += _hanging([("  → ", "muted")], action, width, "")
    lines.append([])
    lines += text_lines(screen.rest, width, "muted", indent=INDENT)
    return lines


def _led(text: str, result: str, width: int | None) -> list[Line]:
    """The decision line: its result word coloured, the rest wrapped under it."""
    head, _, rest = text.partition(": ")
    body = text_lines(rest, None if width is None else max(width - len(head) - 2, 1))
    first = [(f"{head}: ", result), *body[0]]
    return [first, *[[(" " * INDENT, ""), *x] for x in body[1:]]]


def _hanging(head: Line, text: str, width: int | None, style: str) -> list[Line]:
    """``text`` after ``head``, continuation lines under the text's first character."""
    pad = sum(len(t) for t, _ in head)
    body = text_lines(text, None if width is None else max(width - pad, 1), style)
    return [[*head, *body[0]], *[[(" " * pad, ""), *x] for x in body[1:]]]


def print_view(view: View, console: Console, *, wide: bool = False) -> None:
    width = None if wide else console.width
    print_lines(view_lines(view, width, plain=not console.is_terminal), console)


def print_sections(sections: Iterable[Section], console: Console, *, wide: bool = False) -> None:
    """Sections without a headline (``parity scan``, ``ls``, ``show``, ``trend``)."""
    width = None if wide else console.width
    lines: list[Line] = []
    for section in sections:
        if lines:
            lines.append([])
        lines += section_lines(section, width, plain=not console.is_terminal)
    print_lines(lines, console)


def print_lines(lines: Iterable[Line], console: Console) -> None:
    for line in lines:
        text = Text()
        for chunk, style in line:
            text.append(chunk, style=STYLES.get(style, ""))
        console.print(text, soft_wrap=True, highlight=False)


def view_lines(view: View, width: int | None, *, plain: bool) -> list[Line]:
    """The whole view as lines of at most ``width`` (None: natural width)."""
    lines: list[Line] = [[(t, view.result)] for t in _wrap(view.title, width)]
    lines += text_lines(view.subtitle, width, indent=INDENT)
    for note in view.notes:
        lines += text_lines(note, width, "warn", indent=INDENT)
    for section in view.sections:
        lines.append([])
        lines += section_lines(section, width, plain=plain)
    return lines


def section_lines(section: Section, width: int | None, *, plain: bool) -> list[Line]:
    head = f"{section.title}  "
    lines: list[Line]
    if width is not None and len(head) + len(section.result) > width:
        lines = [*text_lines(section.title, width, "title"), [(section.result, section.result)]]
    else:
        lines = [[(head, "title"), (section.result, section.result)]]
    inner = None if width is None else width - INDENT
    pad: tuple[str, str] = (" " * INDENT, "")
    for n, part in enumerate(section.parts):
        if isinstance(part, Table):
            if n:
                lines.append([])
            body = table_lines(part, inner, rule="-" if plain else "─")
        else:
            body = sentence_lines(part, inner)
        lines += [_indented(line, pad) for line in body]
    return lines


def _indented(line: Line, pad: tuple[str, str]) -> Line:
    return [pad, *line] if line else []


def sentence_lines(s: Sentence, width: int | None) -> list[Line]:
    if s.verbatim:
        return [[(x, "muted")] for raw in s.text.splitlines() for x in _wrap(raw, width)]
    if s.result is None:
        return text_lines(s.text, width, s.tone, indent=INDENT)
    word = f"{s.result}  "
    rest = None if width is None else max(width - len(word), 1)
    body = text_lines(s.text, rest, s.tone, indent=INDENT)
    return [[(word, s.result), *body[0]], *[[(" " * len(word), ""), *x] for x in body[1:]]]


def _wrap(text: str, width: int | None) -> list[str]:
    return [line[0][0] for line in text_lines(text, width)]
