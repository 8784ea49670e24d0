"""``parity sweep PLAN``: a matrix of comparisons, one live table, one summary."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer

from parity.cli import common as c


def sweep(
    plan: Annotated[Path, typer.Argument(metavar="PLAN", help="a sweep plan (a [sweep] table)")],
    resume: Annotated[
        bool,
        typer.Option("--resume", help="finish the missing comparisons, never rerun finished ones"),
    ] = False,
    out: Annotated[
        str | None,
        typer.Option("--out", metavar="DIR|URL", help="replace the plan's sweep.out"),
    ] = None,
) -> None:
    """Run workloads x side pairs x sizes x batch sizes as comparisons (on a cluster:
    several at once) and summarise every verdict (terminal, summary.md, summary.html)."""
    from rich.live import Live
    from rich.table import Table

    from parity import storage
    from parity.api.sweep import Cell, load_sweep, run_sweep, summary_rows, with_out
    from parity.report.sweep import markdown, terminal, to_html

    loaded = load_sweep(plan)
    if out is not None:
        loaded = with_out(loaded, out)
    states = {cell.name: "pending" for cell in loaded.cells}
    lock = threading.Lock()

    def table() -> Table:
        rows = [{"comparison": k, "result": v} for k, v in states.items()]
        return terminal(rows, title=f"parity sweep: {loaded.out}")

    # the live table starts with the first cell's state: a sweep refused before any cell
    # runs (finished cells without --resume, a side this machine cannot run) is one line
    live: Live | None = None

    def changed(cell: Cell, state: str) -> None:
        nonlocal live
        with lock:
            states[cell.name] = state
            if live is None:
                live = Live(table(), console=c.stderr(), auto_refresh=False)
                live.start()
            live.update(table(), refresh=True)

    try:
        outcomes = run_sweep(loaded, resume=resume, on_change=changed)
    finally:
        if live is not None:
            live.stop()
    rows = summary_rows(outcomes)
    c.stdout().print(terminal(rows))
    if storage.is_url(loaded.out):
        base = loaded.out.rstrip("/")
        md = storage.put(f"{base}/summary.md", markdown(rows).encode())
        html = storage.put(f"{base}/summary.html", to_html(rows).encode())
        c.note(f"summary: {md}, {html}")
    else:
        where = storage.local(loaded.out)
        where.mkdir(parents=True, exist_ok=True)
        (where / "summary.md").write_text(markdown(rows))
        (where / "summary.html").write_text(to_html(rows))
        c.note(f"summary: {where / 'summary.md'}, {where / 'summary.html'}")
    failed = [r for r in rows if r["result"] != "PASS"]
    raise typer.Exit(1 if failed else 0)
