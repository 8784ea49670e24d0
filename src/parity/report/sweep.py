"""A sweep's summary: one row per comparison (result, speed ratio with its interval,
quality, cost) as a terminal table, Markdown or HTML."""

from __future__ import annotations

import html

from rich.table import Table

COLUMNS = ("comparison", "result", "speed", "quality", "cost", "ran", "note")


def terminal(rows: list[dict[str, str]], title: str = "parity sweep") -> Table:
    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(row.get(c, "") for c in COLUMNS))
    return table


def markdown(rows: list[dict[str, str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(cell(r.get(c, "")) for c in COLUMNS) + " |" for r in rows),
    ]
    return "\n".join(lines) + "\n"


def to_html(rows: list[dict[str, str]], title: str = "parity sweep") -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(r.get(c, ''))}</td>" for c in COLUMNS) + "</tr>"
        for r in rows
    )
    return (
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px}</style>"
        f"<h1>{html.escape(title)}</h1><table><tr>{head}</tr>{body}</table>\n"
    )
