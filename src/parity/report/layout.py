"""Text layout that fits a width: wrapping at spaces and dots, never inside a word, and
module names abbreviated from the middle (``bert.encoder.….attention.output.dense``).

A line is a list of ``(text, style)`` spans; styles are names (``header``, ``muted``,
``PASS``, ...) that the terminal maps to colours and plain text ignores. Every line made
for a width is at most that width; ``width=None`` lays out at natural width (``--wide``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from parity.report.parts import Column, ColumnKind, Row, Table

Span = tuple[str, str]
Line = list[Span]
GAP = 2
#: a record's value under its label, where it does not fit beside it
RECORD_INDENT = 4
ELLIPSIS = "…"
#: columns whose cells are abbreviated from the middle, and the separator of their parts
SEPARATORS: dict[ColumnKind, str] = {"name": ".", "path": "/"}
#: figures in one cell (``p50 / p90 / p99``): a number cell breaks only between them
FIGURES = " / "
_FIGURE = re.compile(r"[-+$0-9]")
# a break is allowed after a space, a slash, a plus or a comma, and after a dot that is
# not inside a number (``1.5`` stays whole, ``blocks.0.mlp`` may break after each dot)
_BREAK = re.compile(r"(?<=[/+,])(?=\S)|(?<=[^\d\s]\.)(?=\S)|(?<=\.)(?=[^\d\s])")


def segments(word: str) -> list[str]:
    """A word cut at the places it may break (each piece keeps its trailing separator)."""
    return [s for s in _BREAK.split(word) if s]


def min_width(text: str, kind: ColumnKind = "text") -> int:
    """The narrowest width ``text`` can be laid out in without splitting a word."""
    if not text:
        return 0
    if kind == "number" and _figure_like(text):  # a figure and its unit stay on one line
        *firsts, last = text.split(FIGURES)
        return max([len(last), *(len(x) + len(" /") for x in firsts)])
    if kind in SEPARATORS:
        parts = text.split(SEPARATORS[kind])
        if len(parts) >= 3:
            return min(len(text), len(parts[0]) + 3 + len(parts[-1]))
    return max(len(s) for word in text.split() for s in segments(word))


def abbreviate(name: str, width: int, sep: str = ".") -> str | None:
    """A dotted name shortened from the middle to fit ``width``, keeping as many of its
    last parts as fit, then of its first; an index among the parts left out (the ``4`` of
    ``layer.4``) is kept where it fits, so that sibling modules stay apart. None when not
    even the first and the last part fit."""
    if len(name) <= width:
        return name
    parts = name.split(sep)
    n = len(parts)
    for with_index in (True, False):
        for tail in range(n - 2, 0, -1):
            for head in range(n - tail - 1, 0, -1):
                index = [p for p in parts[head : n - tail] if p.isdigit()][-1:]
                if with_index and not index:
                    continue
                kept = index if with_index else []
                short = sep.join([*parts[:head], ELLIPSIS, *kept, *parts[n - tail :]])
                if len(short) <= width:
                    return short
    return None


def wrap(text: str, width: int | None, later: int | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` (``later`` for the lines after the first):
    whole words where they fit, long words cut after dots and slashes; a piece longer
    than the line is cut only as a last resort (narrower than ``min_width``)."""
    if width is None or len(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""

    def room() -> int:
        return width if not lines or later is None else later

    for word in text.split():
        sep = " " if line else ""
        if len(line) + len(sep) + len(word) <= room():
            line += sep + word
            continue
        if len(word) <= (later or width):
            if line:
                lines.append(line)
            line = word
            continue
        for i, piece in enumerate(segments(word)):
            sep = " " if line and i == 0 else ""
            if len(line) + len(sep) + len(piece) <= room():
                line += sep + piece
                continue
            if line:
                lines.append(line)
            while len(piece) > room():
                cut = room()
                lines.append(piece[:cut])
                piece = piece[cut:]
            line = piece
    if line:
        lines.append(line)
    return lines or [""]


def fit_cell(text: str, kind: ColumnKind, width: int | None) -> list[str]:
    if width is None or len(text) <= width:
        return [text]
    if kind == "number" and _figure_like(text):  # whole figures; words only if even one
        return [piece for line in _figures(text, width) for piece in wrap(line, width)]
    if kind in SEPARATORS:
        short = abbreviate(text, width, SEPARATORS[kind])
        if short is not None:
            return [short]
    return wrap(text, width)


def _figure_like(text: str) -> bool:
    """A cell that starts with a figure (``10.00 ms``, ``$4.10``), not with words."""
    return bool(_FIGURE.match(text))


def _figures(text: str, width: int) -> list[str]:
    """Figures (``p50 / p90 / p99``) broken only between figures, never inside one."""
    lines: list[str] = []
    for figure in text.split(FIGURES):
        if lines and len(lines[-1]) + len(FIGURES) + len(figure) <= width:
            lines[-1] += FIGURES + figure
        else:
            lines.append(figure)
    return [x + " /" if i < len(lines) - 1 else x for i, x in enumerate(lines)]


def column_widths(
    columns: Sequence[Column], rows: Sequence[Row], width: int | None
) -> list[int] | None:
    """Widths that fit ``width`` (natural where all fit), or None when even the narrowest
    layout does not fit."""
    cells = [[c.header for c in columns], *[list(r.cells) for r in rows]]
    natural = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    if width is None:
        return natural
    room = width - GAP * (len(columns) - 1)
    if sum(natural) <= room:
        return natural
    least = [
        max(min_width(row[i], "text" if row is cells[0] else columns[i].kind) for row in cells)
        for i in range(len(columns))
    ]
    if sum(least) > room:
        return None
    return _share(natural, least, room - sum(least))


def _share(natural: list[int], least: list[int], spare: int) -> list[int]:
    """Widths from the least up: the columns that need least to be whole first (a short
    label never wraps for the sake of a long text), the rest of the room shared among the
    others in proportion to what they lack."""
    got = list(least)
    want = {i: n - m for i, (n, m) in enumerate(zip(natural, least, strict=True)) if n > m}
    for i in sorted(want, key=lambda i: want[i]):
        if want[i] > spare // len(want):
            break
        got[i] += want.pop(i)
        spare -= got[i] - least[i]
    total = sum(want.values())
    for i, lack in want.items():
        got[i] += lack * spare // total
    left = spare - sum(lack * spare // total for lack in want.values()) if total else 0
    for i in sorted(want, key=lambda i: got[i] - natural[i]):
        if left <= 0:
            break
        got[i] += 1
        left -= 1
    return got


def _fit_rows(table: Table, widths: list[int]) -> list[list[list[str]]]:
    """Each cell of each row as its lines; module names that would abbreviate to the same
    text are wrapped at their dots instead, so that no two rows read alike."""
    fitted = [
        [
            fit_cell(cell, col.kind, w)
            for cell, col, w in zip(row.cells, table.columns, widths, strict=True)
        ]
        for row in table.rows
    ]
    for i, (col, w) in enumerate(zip(table.columns, widths, strict=True)):
        if col.kind not in SEPARATORS:
            continue
        seen: dict[str, set[str]] = {}
        for row, cells in zip(table.rows, fitted, strict=True):
            seen.setdefault(cells[i][0], set()).add(row.cells[i])
        for row, cells in zip(table.rows, fitted, strict=True):
            if len(seen[cells[i][0]]) > 1:
                cells[i] = wrap(row.cells[i], w)
    return fitted


def _row_lines(
    fitted: Sequence[list[str]], columns: Sequence[Column], widths: list[int], styles: list[str]
) -> list[Line]:
    out: list[Line] = []
    for k in range(max(len(f) for f in fitted)):
        line: Line = []
        for i, (f, col, w) in enumerate(zip(fitted, columns, widths, strict=True)):
            text = f[k] if k < len(f) else ""
            text = text.rjust(w) if col.right else text.ljust(w)
            if i:
                line.append((" " * GAP, ""))
            line.append((text, styles[i]))
        out.append(_trim(line))
    return out


def _trim(line: Line) -> Line:
    """No trailing spaces."""
    while line and not line[-1][0].strip():
        line = line[:-1]
    if line:
        text, style = line[-1]
        line = [*line[:-1], (text.rstrip(), style)]
    return line


def _cell_styles(row: Row, columns: Sequence[Column]) -> list[str]:
    styles = []
    for cell, col in zip(row.cells, columns, strict=True):
        if col.kind == "result":
            styles.append(cell)
        else:
            styles.append("highlight" if row.highlight else "")
    return styles


def table_lines(table: Table, width: int | None, *, rule: str = "─") -> list[Line]:
    """A table laid out for ``width``: title, header, a rule, rows, legend."""
    out: list[Line] = []
    if table.title:
        out += [[(t, "title")] for t in wrap(table.title, width)]
    widths = column_widths(table.columns, table.rows, width)
    if widths is None:
        out += _records(table, width)
    else:
        headers = [wrap(c.header, w) for c, w in zip(table.columns, widths, strict=True)]
        out += _row_lines(headers, table.columns, widths, ["header"] * len(headers))
        out.append(_trim([(f"{rule * w}{' ' * GAP}", "rule") for w in widths]))
        for row, cells in zip(table.rows, _fit_rows(table, widths), strict=True):
            out += _row_lines(cells, table.columns, widths, _cell_styles(row, table.columns))
    if table.legend:
        out += [[(t, "muted")] for t in wrap(table.legend, width)]
    return out


def _records(table: Table, width: int | None) -> list[Line]:
    """Too narrow for columns: each row as its first cell, then ``header: value`` lines."""
    out: list[Line] = []
    for row in table.rows:
        styles = _cell_styles(row, table.columns)
        cells = list(zip(table.columns, row.cells, styles, strict=True))
        (col, cell, style), *rest = cells
        head = f"{col.header}: {cell}" if col.header else cell
        out += [[(x, style or "strong")] for x in fit_cell(head, "text", width)]
        for col, cell, style in rest:
            out += _field(col, cell, style, width)
    return out


def _field(col: Column, cell: str, style: str, width: int | None) -> list[Line]:
    """``header: value`` of a record: the value beside its label where it fits there
    without breaking a word, else under it, indented (a narrow terminal and a long
    label: ``evidence, or how to check:``)."""
    label = f"  {col.header}: " if col.header else "  "
    room = None if width is None else width - len(label)
    if room is None or room >= max(min_width(cell, col.kind), 1):
        lines = fit_cell(cell, col.kind, room)
        return [
            [(label, "muted"), (lines[0], style)],
            *[[(" " * len(label), ""), (x, style)] for x in lines[1:]],
        ]
    assert width is not None
    head = [[("  " + t, "muted")] for t in wrap(label.strip(), max(width - 2, 1))]
    pad = " " * min(RECORD_INDENT, max(width - 1, 0))
    body = fit_cell(cell, col.kind, max(width - len(pad), 1))
    return [*head, *[[(pad, ""), (x, style)] for x in body]]


def text_lines(text: str, width: int | None, style: str = "", indent: int = 0) -> list[Line]:
    """A sentence wrapped to ``width``, continuation lines indented by ``indent``."""
    later = None if width is None else max(width - indent, 1)
    lines = wrap(text, width, later)
    return [[(lines[0], style)], *[[(" " * indent + x, style)] for x in lines[1:]]]


def width_of(line: Line) -> int:
    return sum(len(text) for text, _ in line)
