"""The history index (``parity.store``): ``ls``, ``show``, ``trend`` and ``reindex``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from parity.cli import common as c
from parity.model.codec import dumps

WorkloadFilter = Annotated[
    str | None, typer.Option("--workload", metavar="NAME", help="only this workload")
]
DeviceFilter = Annotated[
    str | None,
    typer.Option("--device", metavar="SIDE", help="only runs on this device type, spec or name"),
]
Limit = Annotated[int, typer.Option("--limit", metavar="N", help="at most this many runs")]


def ls(
    workload: WorkloadFilter = None,
    device: DeviceFilter = None,
    limit: Limit = 50,
    store: c.Store = None,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
) -> None:
    """List indexed comparisons and runs, newest first."""
    from parity.report.history import render_runs
    from parity.request.values import check_number
    from parity.store import Store

    count = int(check_number("--limit", limit, integer=True, low=1, high=10**6))
    with Store.open(store) as s:
        rows = s.runs(workload=workload, device=device, limit=count)
    _emit(rows, as_json, lambda: render_runs(rows, c.stdout(), wide=wide))


def _emit(found: object, as_json: bool, render: Callable[[], None]) -> None:
    """What a command found, as JSON on stdout or rendered for the terminal."""
    if as_json:
        c.write_out(dumps(found))
    else:
        render()


def show(
    run_id: Annotated[
        str, typer.Argument(metavar="ID", help="an id from parity ls (a unique prefix will do)")
    ],
    store: c.Store = None,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
) -> None:
    """One indexed comparison or run: where it is, its bundles and figures."""
    from parity.report.history import render_record
    from parity.store import Store

    with Store.open(store) as s:
        record = s.show(run_id)
    _emit(record, as_json, lambda: render_record(record, c.stdout(), wide=wide))


def trend(
    metric: Annotated[
        str,
        typer.Argument(
            metavar="METRIC", help="e.g. median_step_s, tokens_per_s, ttft_p50_s, speed_ratio"
        ),
    ],
    workload: WorkloadFilter = None,
    device: DeviceFilter = None,
    side: Annotated[
        str | None,
        typer.Option(
            "--side", metavar="SIDE", help="only this side spec or role (baseline, target)"
        ),
    ] = None,
    store: c.Store = None,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
) -> None:
    """A metric over the indexed runs, oldest first, per side."""
    from parity.report.history import render_trend
    from parity.store import Store

    with Store.open(store) as s:
        points = s.trend(metric, workload=workload, device=device, side=side)
    _emit(points, as_json, lambda: render_trend(metric, points, c.stdout(), wide=wide))


def reindex(
    dirs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="DIRS",
            help="directories or URL prefixes holding runs (default: those the index knows)",
        ),
    ] = None,
    store: c.Store = None,
) -> None:
    """Rebuild the history index from the bundles (they are the truth)."""
    from parity.errors import UsageError
    from parity.safety.urls import checked
    from parity.storage import is_url
    from parity.store import Store

    for url in dirs or []:
        checked(url, "URL")  # before the index is opened
    for d in (Path(d) for d in dirs or [] if not is_url(d)):
        try:
            what = None if d.is_dir() else "is not a directory" if d.exists() else "does not exist"
        except OSError as exc:  # a name too long for the file system, say
            what = f"cannot be read ({exc.strerror or exc})"
        if what is not None:
            shown = str(d) if len(str(d)) <= 120 else f"{str(d)[:120]}..."
            raise UsageError(f"{shown} {what}: pass the directories that hold runs")

    with Store.open(store) as s:
        path, result = s.path, s.reindex(list(dirs or []))
    for problem in result.problems:
        c.note(f"skipped {problem}")
    c.stdout().print(
        f"{path}: {result.comparisons} comparison(s), "
        + (f"{result.serving} serving comparison(s), " if result.serving else "")
        + f"{result.bundles} bundle(s); "
        f"{result.removed} vanished run(s) forgotten",
        markup=False,
        soft_wrap=True,
    )


SHORT_HELP: dict[Callable[..., None], str] = {
    ls: "list indexed comparisons and runs, newest first",
    show: "one indexed comparison or run",
    trend: "a metric over the indexed runs, per side",
    reindex: "rebuild the history index from the bundles",
}


def register(app: typer.Typer) -> None:
    for command, short in SHORT_HELP.items():
        app.command(short_help=short)(command)
