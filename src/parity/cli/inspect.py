"""Commands that read rather than run: ``diff`` (judge two bundles), ``report``,
``schema``, ``env``, ``workloads`` and ``init`` (write a plan file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from parity.cli import common as c
from parity.cli.render import show_verdict, table
from parity.schemas import SCHEMAS

if TYPE_CHECKING:
    from parity.report.parts import ColumnKind

SchemaName = Enum("SchemaName", {name: name for name in SCHEMAS})  # type: ignore[misc]


@c.table_options("diff")
def diff(
    ctx: typer.Context,
    baseline_bundle: Annotated[
        str,
        typer.Argument(
            metavar="BASELINE", help="baseline bundle or side directory (a path or a URL)"
        ),
    ],
    target_bundle: Annotated[
        str,
        typer.Argument(metavar="TARGET", help="target bundle or side directory (a path or a URL)"),
    ],
    reference: Annotated[
        str | None,
        typer.Option(
            metavar="DIR", help="fp64 reference bundle (default: reference/ beside the sides)"
        ),
    ] = None,
    as_json: c.AsJson = False,
    wide: c.Wide = False,
    verbose: c.Verbose = False,
    **options: object,
) -> None:
    """Judge two existing bundles, e.g. made on two machines.

    Sides of one parity compare are judged with the inputs it stored (inputs.json); the
    options given here replace them."""
    from parity.request import options as o

    chosen = c.given_options(ctx, "diff")
    if _serving_diff(baseline_bundle, target_bundle, chosen.value(o.PRICES, {})):
        return
    from parity import api

    verdict = api.diff(
        baseline_bundle,
        target_bundle,
        given=chosen,
        reference=reference,
        checks=[Path(p) for p in chosen.value(o.CHECKS_DIRS, ())] or None,
    )
    show_verdict(verdict, c.stdout(), as_json=as_json, wide=wide, verbose=verbose)
    raise typer.Exit(verdict.exit_code)


def explain(
    run_dir: Annotated[
        str,
        typer.Argument(metavar="RUN", help="a comparison directory or URL (compare --out)"),
    ],
    section: Annotated[
        str | None,
        typer.Argument(
            metavar="SECTION",
            help="one section in full: gates, sides, quality, numerics, speed, cost, memory, "
            "phases, compatibility... (default: every section)",
        ),
    ] = None,
    wide: c.Wide = False,
) -> None:
    """Print a saved verdict in full, every section or one, as --verbose would have."""
    from parity import storage
    from parity.report.run import load_run
    from parity.report.terminal import print_sections, print_view
    from parity.report.view import build_view

    run = load_run(storage.readable(run_dir))
    view = build_view(run.verdict, sides=run.sides, notes=run.problems)
    if section is None:
        print_view(view, c.stdout(), wide=wide)
        return
    found = view.section(section)
    if found is None:
        from parity.errors import UsageError

        keys = ", ".join(s.key for s in view.sections)
        raise UsageError(f"{run_dir} has no section {section!r}: name one of {keys}")
    print_sections([found], c.stdout(), wide=wide)


def _serving_diff(a: str, b: str, prices: object) -> bool:
    """Two serving side bundles: their verdict, as ``parity serve`` gave it."""
    from parity.serving.bundle import is_serving

    if not (is_serving(Path(a)) and is_serving(Path(b))):
        return False
    from parity.api.serve import diff as serve_diff
    from parity.report.serving import lines
    from parity.serving.bundle import SideBundle

    assert isinstance(prices, dict)
    verdict = serve_diff([Path(a), Path(b)], min_match=0.95, prices=prices)
    read = {"baseline": SideBundle(Path(a)), "target": SideBundle(Path(b))}
    sides = {r: x.side for r, x in read.items()}
    for line in lines(verdict, sides, {r: x.steps for r, x in read.items()}):
        c.write_out(line)
    raise typer.Exit({"pass": 0, "fail": 1, "inconclusive": 3}[verdict.outcome])


def report(
    run_dir: Annotated[
        str,
        typer.Argument(metavar="RUN_DIR", help="a comparison directory or URL (compare --out)"),
    ],
    html: Annotated[
        Path | None, typer.Option("--html", metavar="FILE", help="write the HTML report")
    ] = None,
    md: Annotated[
        Path | None, typer.Option("--md", metavar="FILE", help="write Markdown; - for stdout")
    ] = None,
    json_path: Annotated[
        Path | None,
        typer.Option("--json", metavar="FILE", help="write the verdict JSON; - for stdout"),
    ] = None,
) -> None:
    """Write reports of a comparison: HTML with plots, Markdown for a pull request, JSON.

    With no option, writes RUN_DIR/report.html (for a URL: NAME-report.html here)."""
    from parity import storage
    from parity.report.run import write_reports

    if storage.is_url(run_dir) and html is None and md is None and json_path is None:
        html = Path(f"{run_dir.rstrip('/').rsplit('/', 1)[-1]}-report.html")
    made = write_reports(storage.readable(run_dir), html=html, md=md, json_path=json_path)
    for kind, where in made.items():
        if isinstance(where, str):
            c.write_out(where)
        else:
            c.note(f"{kind}: {where}")


def schema(
    name: Annotated[
        SchemaName | None,
        typer.Argument(metavar="NAME", help="which document (default: all)", show_default=False),
    ] = None,
) -> None:
    """Print the JSON Schema of bundle documents and verdicts."""
    from parity.schemas import all_schemas
    from parity.schemas import schema as one_schema

    c.write_out(json.dumps(one_schema(name.value) if name else all_schemas(), indent=2))


def env(as_json: c.AsJson = False, wide: c.Wide = False) -> None:
    """This machine's environment as a bundle would record it (CPU adapter, no device)."""
    from parity.devices import get_device, known_device_types
    from parity.model.codec import encode
    from parity.probes.environment import collect
    from parity.probes.packages import installed as collect_freeze

    found = encode(collect(get_device("cpu")))
    assert isinstance(found, dict)
    data: dict[str, object] = {**found, "known_device_types": sorted(known_device_types())}
    if as_json:
        c.write_out(json.dumps(data, indent=2))
        return
    rows = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in data.items()]
    freeze = collect_freeze()
    rows = [
        (k, f"{freeze.packages} distributions, sha256 {freeze.sha256[:12]} (--json lists them)")
        if k == "pip_freeze"
        else (k, v)
        for k, v in rows
    ]
    table("parity env", [("setting", "name"), ("value", "text")], rows, wide=wide)


class WorkloadRow(NamedTuple):
    name: str
    kind: str
    size: str
    parameters: int
    batch_size: int
    seq_len: int | None
    steps: int
    description: str


def workloads(as_json: c.AsJson = False, wide: c.Wide = False) -> None:
    """List the registered workloads with their sizes and parameter counts."""
    from parity.model.spec import WorkloadSpec
    from parity.workloads import registered

    rows = []
    for name, cls in registered().items():
        for size in cls.sizes:
            w = cls(WorkloadSpec(name=name, size=size))
            rows.append(
                WorkloadRow(
                    name, cls.kind, size, w.parameter_count(), w.batch_size, w.seq_len,
                    w.steps, cls.description,
                )
            )  # fmt: skip
    if as_json:
        c.write_out(json.dumps([r._asdict() for r in rows], indent=2))
        return
    columns: list[tuple[str, ColumnKind]] = [("name", "name"), ("kind", "text"), ("size", "text")]
    columns += [(h, "number") for h in ("params", "batch", "seq", "steps")]
    columns.append(("description", "text"))
    cells = [
        (r.name, r.kind, r.size, f"{r.parameters / 1e6:.2f}M", str(r.batch_size), *tail)
        for r in rows
        for tail in [(str(r.seq_len or "-"), str(r.steps), r.description)]
    ]
    legend = "params: parameter count (M: millions); batch, seq, steps: the size's defaults"
    table("workloads", columns, cells, wide=wide, legend=legend)


def init(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="where to write the plan")] = Path(
        "parity.toml"
    ),
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
) -> None:
    """Write a commented plan file (workload, sides, quality, cost, operational notes)."""
    from parity.request.plan import write_template

    write_template(path, force=force)
    c.stdout().print(
        f"wrote {path}: edit it, then run parity compare --plan {path}",
        markup=False,
        soft_wrap=True,
    )


SHORT_HELP: dict[Callable[..., None], str] = {
    diff: "judge two existing bundles (same verdict as compare)",
    explain: "print a saved verdict in full, or one section of it",
    report: "write HTML, Markdown or JSON reports of a comparison",
    schema: "print the JSON Schema of bundles and verdicts",
    env: "this machine's environment as a bundle records it",
    workloads: "list the workloads with sizes and parameter counts",
    init: "write a commented plan file (parity.toml)",
}


def register(app: typer.Typer) -> None:
    for command, short in SHORT_HELP.items():
        app.command(short_help=short)(command)
