"""The parts of a report view: sections made of sentences and tables, in plain strings.

A view is what every renderer formats (terminal, Markdown, HTML, the result objects'
own display): the figures in it are already written out by ``parity.report.fmt`` and
the sentences already said, so a renderer only chooses fonts, colours and line breaks.
``brief`` marks what a short summary (a pull-request comment) keeps.

Every string a part holds is made printable when the part is made
(``parity.printable``): a workload's name, output or exception, or a bundle's text, can
carry terminal control sequences, and no renderer shows them raw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from parity.printable import printable
from parity.report.fmt import Result


def _clean(part: object, *names: str) -> None:
    """Make the named string fields of a frozen part printable, in place."""
    for name in names:
        value = getattr(part, name)
        if isinstance(value, str):
            object.__setattr__(part, name, printable(value))
        elif isinstance(value, tuple):
            object.__setattr__(part, name, tuple(printable(v) for v in value))


#: how a sentence reads: plain, good news, bad news, a warning, or background
Tone = Literal["plain", "good", "bad", "warn", "muted", "strong"]
#: ``name``: a dotted module name and ``path``: a file path (both abbreviated from the
#: middle when narrow); ``number``: a figure, right-aligned and never wrapped;
#: ``result``: a result word; ``text``: anything else
ColumnKind = Literal["name", "path", "text", "number", "result"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Column:
    header: str
    kind: ColumnKind = "text"

    def __post_init__(self) -> None:
        _clean(self, "header")

    @property
    def right(self) -> bool:
        return self.kind == "number"


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    cells: tuple[str, ...]
    #: the row the table is about (the first diverging module, a failing gate)
    highlight: bool = False

    def __post_init__(self) -> None:
        _clean(self, "cells")


@dataclass(frozen=True, kw_only=True, slots=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    title: str | None = None
    #: one line explaining derived columns and marks
    legend: str | None = None
    brief: bool = False

    def __post_init__(self) -> None:
        _clean(self, "title", "legend")
        for row in self.rows:
            if len(row.cells) != len(self.columns):
                raise ValueError(
                    f"table {self.title!r}: a row has {len(row.cells)} cells for "
                    f"{len(self.columns)} columns"
                )


@dataclass(frozen=True, kw_only=True, slots=True)
class Sentence:
    text: str
    tone: Tone = "plain"
    #: a result word said before the sentence
    result: Result | None = None
    brief: bool = False
    #: verbatim text (a stderr tail): shown as it is, in a monospace block
    verbatim: bool = False

    def __post_init__(self) -> None:
        _clean(self, "text")


Part = Sentence | Table


@dataclass(frozen=True, kw_only=True, slots=True)
class Section:
    key: str
    title: str
    result: Result
    parts: tuple[Part, ...]
    #: the plots (``parity.report.plots`` keys) that belong to this section
    plots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _clean(self, "title")

    @property
    def empty(self) -> bool:
        return not self.parts


@dataclass(frozen=True, kw_only=True, slots=True)
class View:
    """A whole report: its headline and its sections in reading order."""

    title: str
    result: Result
    subtitle: str
    sections: tuple[Section, ...]
    #: what the report could not read (a side's bundles), said once at the top
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        _clean(self, "title", "subtitle", "notes")

    def section(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)


def table(
    columns: Sequence[tuple[str, ColumnKind]],
    rows: Sequence[tuple[str, ...] | Row],
    *,
    title: str | None = None,
    legend: str | None = None,
    brief: bool = False,
) -> Table:
    """A table from (header, kind) pairs and rows of cells."""
    made = tuple(r if isinstance(r, Row) else Row(cells=tuple(r)) for r in rows)
    cols = tuple(Column(header=h, kind=k) for h, k in columns)
    return Table(columns=cols, rows=made, title=title, legend=legend, brief=brief)


def sentences(parts: tuple[Part, ...]) -> list[Sentence]:
    return [p for p in parts if isinstance(p, Sentence)]


def tables(parts: tuple[Part, ...]) -> list[Table]:
    return [p for p in parts if isinstance(p, Table)]
