"""The ``parity`` command line: parse, call ``parity.api``, map errors to exit codes.

Exit codes: 0 the target passes every gate; 1 it fails a gate or a side failed;
2 bad input or usage (one line on stderr naming the problem and the fix).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.status import Status
from rich.table import Table

from parity import __version__
from parity.checks.cli import ChecksOpt, check_app, check_dirs
from parity.errors import ParityError, UsageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="Move a PyTorch workload between accelerators with evidence: "
    "compatibility, numerics, performance and cost, side by side.",
)
app.add_typer(check_app, name="check")  # parity check rollback | recovery | soak
out_console = Console()
err_console = Console(stderr=True)
T = TypeVar("T")

SizeOpt = Annotated[str, typer.Option("--size", help="tiny | small | base")]
BatchOpt = Annotated[int | None, typer.Option("--batch-size", help="override the batch size")]
SeqOpt = Annotated[int | None, typer.Option("--seq-len", help="override the sequence length")]
StepsOpt = Annotated[int | None, typer.Option("--steps", help="override the step count")]
SeedOpt = Annotated[int, typer.Option("--seed", help="seed of weights and data")]
TimeoutOpt = Annotated[
    float,
    typer.Option("--timeout", help="seconds per side before it is stopped and recorded as failed"),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the verdict as JSON on stdout")]
TargetLossOpt = Annotated[
    float | None,
    typer.Option("--target-loss", help="training: report steps and time to this loss"),
]
PriceOpt = Annotated[
    list[str] | None,
    typer.Option("--price", help="SIDE=DOLLARS_PER_HOUR[:ACCELERATORS], e.g. target=21.50:16"),
]
NprocOpt = Annotated[
    int | None,
    typer.Option("--nproc", help="run each side as a torchrun job of N processes (nproc=N)"),
]
NnodesOpt = Annotated[int, typer.Option("--nnodes", help="torchrun --nnodes")]
RdzvOpt = Annotated[
    str | None, typer.Option("--rdzv-endpoint", help="torchrun --rdzv-endpoint HOST:PORT")
]
AllowOpt = Annotated[
    list[str] | None,
    typer.Option("--allow-diff", help='accept a differing fingerprint field: FIELD="reason"'),
]
HfConfigOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--hf-config",
        help="KEY=VALUE, repeatable: a transformers config setting of an hf: workload "
        "(another workload: one of its config keys); enters the fingerprint",
    ),
]
#: script mode: the command after ``--`` (``main`` splits it off before typer parses)
SCRIPT_ARGV: list[str] = []
_NOT_FOR_SCRIPTS = (
    "workload",
    "size",
    "batch_size",
    "seq_len",
    "steps",
    "seed",
    "hf_config",
    "batch_sizes",
    "plan_path",
    "resume",
)


def script_command(ctx: typer.Context) -> list[str]:
    """The script after ``--``; options that only a workload takes are usage errors."""
    if not SCRIPT_ARGV:
        return []
    sources = {p: ctx.get_parameter_source(p) for p in _NOT_FOR_SCRIPTS}
    given = [
        p.opts[-1] if p.param_type_name == "option" else str(p.name)
        for p in ctx.command.params
        if p.name in sources and getattr(sources[p.name], "name", "DEFAULT") != "DEFAULT"
    ]
    if given:
        fail_usage(
            f"{', '.join(given)} cannot go with a script after --: the script brings its own "
            "model and data; pass its options after --"
        )
    return SCRIPT_ARGV


def with_nproc(side: str, nproc: int) -> str:
    """``--nproc N``: the side as a torchrun job, unless its spec already says how."""
    from parity.spec import parse_side

    spec = parse_side(side)
    return (
        side if spec.nproc is not None else str(replace(spec, nproc=nproc if nproc > 1 else None))
    )


def fail_usage(message: str) -> None:
    err_console.print(f"parity: error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def guarded(fn: Callable[[], T]) -> T:
    """Call into the API; a usage error becomes one line and exit code 2."""
    try:
        return fn()
    except UsageError as exc:
        fail_usage(str(exc))
    except ParityError as exc:
        err_console.print(f"parity: {exc}", markup=False)
        raise typer.Exit(1) from exc
    raise AssertionError("unreachable")


def workload_spec(
    name: str,
    size: str,
    batch_size: int | None,
    seq_len: int | None,
    steps: int | None,
    seed: int,
    hf_config: list[str] | None = None,
) -> Any:
    from parity.spec import WorkloadSpec, parse_overrides

    return WorkloadSpec(
        name=name,
        size=size,
        batch_size=batch_size,
        seq_len=seq_len,
        steps=steps,
        seed=seed,
        overrides=parse_overrides(hf_config),
    )


@contextmanager
def live_progress(enabled: bool) -> Iterator[Callable[[str, dict[str, Any]], None] | None]:
    """A spinner on stderr naming the side and its phase while workers run."""
    if not enabled or not err_console.is_terminal:
        yield None
        return
    status = Status("starting", console=err_console)
    state: dict[str, str] = {}

    def on_event(role: str, event: dict[str, Any]) -> None:
        if event.get("event") == "phase":
            state[role] = str(event.get("phase"))
        elif event.get("event") == "progress":
            state[role] = f"steps {event.get('done')}/{event.get('steps')}"
        status.update(f"{role}: {state.get(role, '')}")

    with status:
        yield on_event


@app.command()
def compare(
    ctx: typer.Context,
    workload: Annotated[
        str, typer.Argument(help="built-in name or path/to/file.py:factory")
    ] = "gpt-train",
    baseline: Annotated[str, typer.Option(help="side spec, e.g. cpu, cuda:0+bf16")] = "cpu",
    target: Annotated[
        str | None,
        typer.Option(help="side spec; default: the accelerator PyTorch reports, else cpu+bf16"),
    ] = None,
    size: SizeOpt = "tiny",
    batch_size: BatchOpt = None,
    seq_len: SeqOpt = None,
    steps: StepsOpt = None,
    seed: SeedOpt = 0,
    out: Annotated[Path | None, typer.Option(help="output directory (new or empty)")] = None,
    allow_diff: AllowOpt = None,
    batch_sizes: Annotated[
        str | None,
        typer.Option(
            help="inference/generation: one comparison per batch size, e.g. 1,8,32, and "
            "the throughput-latency curve"
        ),
    ] = None,
    repeats: Annotated[
        int | None,
        typer.Option(
            help="fresh processes per side; default: adaptive (see --precision, --budget)"
        ),
    ] = None,
    precision: Annotated[
        float, typer.Option(help="stop when the speed ratio's 95% interval is within this fraction")
    ] = 0.02,
    budget: Annotated[
        float, typer.Option(help="seconds of measuring before adaptive repeats stop")
    ] = 30.0,
    compliance: Annotated[
        bool, typer.Option(help="run the target's re-seeded and identical-input checks")
    ] = True,
    target_loss: TargetLossOpt = None,
    price: PriceOpt = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="finish an interrupted compare in this directory, reusing its complete bundles",
        ),
    ] = None,
    plan_path: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            help="a plan file (parity init writes one); its settings replace the "
            "workload, sides and measuring options",
        ),
    ] = None,
    nproc: NprocOpt = None,
    nnodes: NnodesOpt = 1,
    rdzv_endpoint: RdzvOpt = None,
    timeout: TimeoutOpt = 900.0,
    as_json: JsonOpt = False,
    hf_config: HfConfigOpt = None,
    checks: ChecksOpt = None,
) -> None:
    """Run a workload on a baseline and a target in fresh, interleaved processes; judge.

    Script mode: ``parity compare --target cpu+bf16 -- python train.py --device {device}``
    runs an unmodified training script once per side (see docs/script-mode.md)."""
    from parity import api
    from parity.judge.cost import CostInputs, parse_price
    from parity.plan import load_plan
    from parity.report.terminal import curve_table, render
    from parity.runner.measure import Plan

    script = script_command(ctx)
    if resume is not None:
        with live_progress(True) as progress:
            resumed = guarded(lambda: api.resume(resume, progress=progress))
        _print_verdict(resumed, as_json)
        raise typer.Exit(resumed.verdict.exit_code)
    wspec = guarded(
        lambda: workload_spec(workload, size, batch_size, seq_len, steps, seed, hf_config)
    )
    cost, operational = CostInputs(), None
    measure: dict[str, Any] = {
        "repeats": repeats,
        "precision": precision,
        "budget_s": budget,
        "compliance": compliance,
        "timeout_s": timeout,
        "torchrun": {"nnodes": nnodes, "rdzv_endpoint": rdzv_endpoint},
    }
    if plan_path is not None:
        pf = guarded(lambda: load_plan(plan_path))
        wspec, baseline, target = pf.workload, pf.baseline, pf.target
        target_loss = target_loss if target_loss is not None else pf.target_loss
        allow_diff = allow_diff or pf.allow_diff
        cost, operational = pf.cost, pf.operational
        measure.update(pf.measure)
    if price:
        extra = dict(guarded(lambda: [parse_price(p) for p in price]))
        cost = replace(cost, prices={**cost.prices, **extra})
    try:
        plan = Plan(**measure)
    except ValueError as exc:
        fail_usage(str(exc))
    target_spec = target if target is not None else api.default_target()
    if nproc is not None:
        n, base_in, target_in = nproc, baseline, target_spec
        baseline = guarded(lambda: with_nproc(base_in, n))
        target_spec = guarded(lambda: with_nproc(target_in, n))
    if script:
        from parity.runner.script import compare_script

        with live_progress(True) as progress:
            result = guarded(
                lambda: compare_script(
                    script,
                    baseline,
                    target_spec,
                    out=out,
                    allow_diff=allow_diff,
                    plan=plan,
                    progress=progress,
                    target_loss=target_loss,
                    cost=cost,
                    operational=operational,
                )
            )
        _print_verdict(result, as_json)
        raise typer.Exit(result.verdict.exit_code)
    if batch_sizes is not None:
        if batch_size is not None:
            fail_usage("give --batch-size or --batch-sizes, not both")
        sizes = guarded(lambda: api.parse_batch_sizes(batch_sizes))
        with live_progress(True) as progress:
            curve_out, results, curve = guarded(
                lambda: api.compare_curve(
                    wspec,
                    baseline,
                    target_spec,
                    sizes,
                    out=out,
                    allow_diff=allow_diff,
                    plan=plan,
                    progress=progress,
                )
            )
        if as_json:
            verdicts = [r.verdict.to_dict() for r in results]
            print(json.dumps({"curve": curve, "verdicts": verdicts}, indent=2))
        else:
            for r in results:
                render(r.verdict.to_dict(), out_console)
            out_console.print(curve_table(curve))
            out_console.print(f"bundles, verdicts and curve.json in {curve_out}")
        raise typer.Exit(max(r.verdict.exit_code for r in results))
    with live_progress(True) as progress:
        result = guarded(
            lambda: api.compare(
                wspec,
                baseline,
                target_spec,
                out=out,
                allow_diff=allow_diff,
                plan=plan,
                progress=progress,
                target_loss=target_loss,
                cost=cost,
                operational=operational,
                checks=check_dirs(checks),
            )
        )
    _print_verdict(result, as_json)
    raise typer.Exit(result.verdict.exit_code)


def _print_verdict(result: Any, as_json: bool) -> None:
    from parity import api
    from parity.report.terminal import render

    verdict = result.verdict
    if as_json:
        print(api.verdict_json(verdict))
    else:
        render(verdict.to_dict(), out_console)
        out_console.print(f"bundles and verdict.json in {result.out}")
    if result.report is not None:
        (err_console if as_json else out_console).print(
            f"report: {result.report}", markup=False, highlight=False, soft_wrap=True
        )


@app.command()
def run(
    ctx: typer.Context,
    device: Annotated[str, typer.Option("--device", help="side spec, e.g. cpu+bf16")],
    out: Annotated[Path, typer.Option(help="bundle directory to create (new or empty)")],
    workload: Annotated[
        str | None,
        typer.Argument(help="built-in name, hf:ARCH or path/to/file.py:factory"),
    ] = None,
    size: SizeOpt = "tiny",
    batch_size: BatchOpt = None,
    seq_len: SeqOpt = None,
    steps: StepsOpt = None,
    seed: SeedOpt = 0,
    nproc: NprocOpt = None,
    nnodes: NnodesOpt = 1,
    rdzv_endpoint: RdzvOpt = None,
    timeout: TimeoutOpt = 900.0,
    hf_config: HfConfigOpt = None,
) -> None:
    """Run a workload (or a script after --) on one side and write its bundle."""
    from parity import api
    from parity.report.terminal import fmt_s

    script = script_command(ctx)
    if script:
        from parity.runner.script import run_script

        with live_progress(True) as progress:
            bundle = guarded(
                lambda: run_script(script, device, out, timeout_s=timeout, progress=progress)
            )
    elif workload is None:
        fail_usage("name a workload (e.g. mlp-train) or a script after --")
    else:
        name = workload
        wspec = guarded(
            lambda: workload_spec(name, size, batch_size, seq_len, steps, seed, hf_config)
        )
        side = guarded(lambda: with_nproc(device, nproc)) if nproc is not None else device
        torchrun = {"nnodes": nnodes, "rdzv_endpoint": rdzv_endpoint}
        with live_progress(True) as progress:
            bundle = guarded(
                lambda: api.run(
                    wspec, side, out, timeout_s=timeout, progress=progress, torchrun=torchrun
                )
            )
    if not bundle.ok:
        err_console.print(f"{bundle.side} failed: {bundle.manifest.get('reason')}", markup=False)
        raise typer.Exit(1)
    summary = bundle.metrics.get("summary") or {}
    out_console.print(
        f"{bundle.side}: median steady step {fmt_s(summary.get('median'))}; bundle {bundle.path}"
    )


@app.command()
def diff(
    bundle_a: Annotated[Path, typer.Argument(help="baseline bundle directory")],
    bundle_b: Annotated[Path, typer.Argument(help="target bundle directory")],
    allow_diff: AllowOpt = None,
    reference: Annotated[
        Path | None,
        typer.Option(help="fp64 reference bundle (default: reference/ beside the sides)"),
    ] = None,
    target_loss: TargetLossOpt = None,
    price: PriceOpt = None,
    as_json: JsonOpt = False,
    checks: ChecksOpt = None,
) -> None:
    """Judge two existing bundles, e.g. made on two machines."""
    from parity import api
    from parity.report.terminal import render

    verdict = guarded(
        lambda: api.diff(
            bundle_a,
            bundle_b,
            allow_diff=allow_diff,
            reference=reference,
            target_loss=target_loss,
            prices=price,
            checks=check_dirs(checks),
        )
    )
    if as_json:
        print(api.verdict_json(verdict))
    else:
        render(verdict.to_dict(), out_console)
    raise typer.Exit(verdict.exit_code)


@app.command()
def env(as_json: JsonOpt = False) -> None:
    """This machine's environment as a bundle would record it (CPU adapter, no device)."""
    from parity.devices import get_device, known_device_types
    from parity.probes.environment import collect

    data = collect(get_device("cpu"))
    data["known_device_types"] = sorted(guarded(known_device_types))
    if as_json:
        print(json.dumps(data, indent=2))
        return
    table = Table(title="parity env", title_justify="left", show_header=False)
    for key, value in data.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict | list) else str(value))
    out_console.print(table)


@app.command()
def workloads(as_json: JsonOpt = False) -> None:
    """List the registered workloads with their sizes."""
    from parity.spec import WorkloadSpec
    from parity.workloads import registered

    rows: list[dict[str, Any]] = []
    for name, cls in guarded(registered).items():
        for size in cls.sizes:
            w = cls(WorkloadSpec(name=name, size=size))
            rows.append(
                {
                    "name": name,
                    "kind": cls.kind,
                    "size": size,
                    "parameters": w.parameter_count(),
                    "batch_size": w.batch_size,
                    "seq_len": w.seq_len,
                    "steps": w.steps,
                    "description": cls.description,
                }
            )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="workloads", title_justify="left")
    for col in ("name", "kind", "size", "parameters", "batch", "seq", "steps", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"],
            r["kind"],
            r["size"],
            f"{r['parameters'] / 1e6:.2f}M",
            str(r["batch_size"]),
            str(r["seq_len"] or "-"),
            str(r["steps"]),
            r["description"],
        )
    out_console.print(table)


@app.command()
def scan(
    workload: Annotated[str, typer.Argument(help="built-in name or path/to/file.py:factory")],
    device: Annotated[str, typer.Option("--device", help="side spec to scan, e.g. neuron")],
    out: Annotated[
        Path | None, typer.Option(help="bundle directory to create (new or empty)")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="exit 1 on any unsupported op or CPU fallback")
    ] = False,
    size: SizeOpt = "tiny",
    batch_size: BatchOpt = None,
    seq_len: SeqOpt = None,
    steps: StepsOpt = None,
    seed: SeedOpt = 0,
    timeout: TimeoutOpt = 900.0,
    as_json: Annotated[bool, typer.Option("--json", help="print ops.json on stdout")] = False,
) -> None:
    """Every op the side cannot run, CPU fallbacks, host syncs and graph breaks, in one pass."""
    from parity import api
    from parity.report.ops import print_all, scan_renderables

    wspec = guarded(lambda: workload_spec(workload, size, batch_size, seq_len, steps, seed))
    with live_progress(True) as progress:
        bundle = guarded(lambda: api.scan(wspec, device, out, timeout_s=timeout, progress=progress))
    ops = bundle.ops
    if as_json:
        head = {"bundle": str(bundle.path), "status": bundle.status}
        print(json.dumps({**head, "reason": bundle.manifest.get("reason"), **ops}, indent=2))
    else:
        print_all(out_console, scan_renderables(ops) if ops else [])
        out_console.print(f"bundle and ops.json in {bundle.path}")
    if not bundle.ok:
        err_console.print(f"{bundle.side} failed: {bundle.manifest.get('reason')}", markup=False)
        raise typer.Exit(1)
    summary = ops.get("summary") or {}
    found = (summary.get("unsupported") or 0, summary.get("fallbacks") or 0)
    if strict and any(found):
        err_console.print(f"parity: --strict: {found[0]} unsupported op(s), {found[1]} fallback(s)")
        raise typer.Exit(1)


StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="history index (default: $PARITY_STORE, else ~/.local/share/parity/index.sqlite)",
    ),
]
WorkloadFilter = Annotated[str | None, typer.Option("--workload", help="only this workload")]
DeviceFilter = Annotated[
    str | None, typer.Option("--device", help="only runs on this device type, spec or name")
]


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="a comparison directory (compare --out)")],
    html: Annotated[Path | None, typer.Option("--html", help="write the HTML report")] = None,
    md: Annotated[Path | None, typer.Option("--md", help="write Markdown; - for stdout")] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="write the verdict JSON; - for stdout")
    ] = None,
) -> None:
    """Write reports of a comparison: HTML with plots, Markdown for a pull request, JSON."""
    from parity import api

    made = guarded(lambda: api.report(run_dir, html=html, md=md, json_path=json_path))
    for kind, where in made.items():
        if isinstance(where, str):
            sys.stdout.write(where)
        else:
            err_console.print(f"{kind}: {where}", markup=False, highlight=False, soft_wrap=True)


@app.command(name="ls")
def list_runs(
    workload: WorkloadFilter = None,
    device: DeviceFilter = None,
    limit: Annotated[int, typer.Option(help="at most this many runs")] = 50,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List indexed comparisons and runs, newest first."""
    from parity.report.history import runs_table
    from parity.store import Store

    def query() -> list[dict[str, Any]]:
        with Store.open(store) as s:
            return s.runs(workload=workload, device=device, limit=limit)

    rows = guarded(query)
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        out_console.print(runs_table(rows))


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="an id from parity ls (a unique prefix will do)")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One indexed comparison or run: where it is, its bundles and figures."""
    from parity.report.history import show_renderable
    from parity.store import Store

    def query() -> dict[str, Any]:
        with Store.open(store) as s:
            return s.show(run_id)

    record = guarded(query)
    if as_json:
        print(json.dumps(record, indent=2))
    else:
        out_console.print(show_renderable(record))


@app.command()
def trend(
    metric: Annotated[
        str, typer.Argument(help="e.g. median_step_s, tokens_per_s, ttft_p50_s, speed_ratio")
    ],
    workload: WorkloadFilter = None,
    device: DeviceFilter = None,
    side: Annotated[
        str | None, typer.Option("--side", help="only this side spec or role (baseline, target)")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A metric over the indexed runs, oldest first, per side."""
    from parity.report.history import trend_renderable
    from parity.store import Store

    def query() -> list[dict[str, Any]]:
        with Store.open(store) as s:
            return s.trend(metric, workload=workload, device=device, side=side)

    points = guarded(query)
    if as_json:
        print(json.dumps(points, indent=2))
    else:
        out_console.print(trend_renderable(metric, points))


@app.command()
def reindex(
    dirs: Annotated[
        list[Path] | None,
        typer.Argument(help="directories holding runs (default: those the index knows)"),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Rebuild the history index from the bundles (they are the truth)."""
    from parity.store import Store

    def rebuild() -> Any:
        with Store.open(store) as s:
            return s.path, s.reindex(list(dirs or []))

    path, result = guarded(rebuild)
    for problem in result.problems:
        err_console.print(f"parity: skipped {problem}", markup=False, soft_wrap=True)
    out_console.print(
        f"{path}: {result.comparisons} comparison(s), {result.bundles} bundle(s); "
        f"{result.removed} vanished run(s) forgotten",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@app.command()
def schema(
    name: Annotated[
        str | None,
        typer.Argument(help="manifest | metrics | numerics | side | verdict (default: all)"),
    ] = None,
) -> None:
    """Print the JSON Schema of bundle documents and verdicts."""
    from parity.schemas import SCHEMAS, all_schemas
    from parity.schemas import schema as one_schema

    if name is not None and name not in SCHEMAS:
        fail_usage(f"no schema {name!r}: use one of {', '.join(SCHEMAS)}")
    print(json.dumps(one_schema(name) if name else all_schemas(), indent=2))


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="where to write the plan")] = Path("parity.toml"),
    force: Annotated[bool, typer.Option(help="overwrite an existing file")] = False,
) -> None:
    """Write a commented plan file (workload, sides, quality, cost, operational notes)."""
    from parity.plan import write_template

    guarded(lambda: write_template(path, force=force))
    out_console.print(f"wrote {path}: edit it, then run parity compare --plan {path}")


@app.command()
def scale(
    workload: Annotated[str, typer.Argument(help="a training workload")],
    device: Annotated[str, typer.Option("--device", help="side spec, e.g. cpu, cuda+bf16")],
    scaling: Annotated[str, typer.Option(help="process counts, e.g. 1,2,4")] = "1,2",
    out: Annotated[Path | None, typer.Option(help="output directory (new or empty)")] = None,
    size: SizeOpt = "tiny",
    batch_size: BatchOpt = None,
    steps: StepsOpt = None,
    seed: SeedOpt = 0,
    nnodes: Annotated[int, typer.Option(help="torchrun --nnodes")] = 1,
    rdzv_endpoint: Annotated[
        str | None, typer.Option(help="torchrun --rdzv-endpoint HOST:PORT (multi-node)")
    ] = None,
    timeout: TimeoutOpt = 900.0,
    as_json: JsonOpt = False,
) -> None:
    """Scaling over process counts as torchrun jobs (DDP): step time, efficiency, all-reduce."""
    import time as _time

    from parity.scaling import parse_counts
    from parity.scaling import scale as run_scale

    wspec = guarded(lambda: workload_spec(workload, size, batch_size, None, steps, seed))
    counts = guarded(lambda: parse_counts(scaling))
    target = out or Path("parity-runs") / f"{_time.strftime('%Y%m%d-%H%M%S')}-{workload}-scaling"
    torchrun = {"nnodes": nnodes, "rdzv_endpoint": rdzv_endpoint}
    report = guarded(
        lambda: run_scale(wspec, device, counts, target, timeout_s=timeout, torchrun=torchrun)
    )
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        table = Table(title=f"scaling {workload} on {device}", title_justify="left")
        for col in (
            "nproc",
            "status",
            "median step",
            "samples/s",
            "speedup",
            "efficiency",
            "all-reduce share",
        ):
            table.add_column(col, justify="right")
        for p in report["points"]:
            table.add_row(
                str(p["nproc"]),
                p["status"],
                _fmt(p.get("median_step_s"), "s"),
                _fmt(p.get("samples_per_s"), ""),
                _fmt(p.get("speedup"), "x"),
                _pct(p.get("efficiency")),
                _pct(p.get("allreduce_share")),
            )
            if p["status"] != "ok":
                err_console.print(f"nproc={p['nproc']} failed: {p['reason']}", markup=False)
        out_console.print(table)
        curves = report.get("loss_curves")
        if curves:
            out_console.print(
                f"loss curves {curves['baseline']} vs {curves['target']}: "
                + ("within the gate" if curves["passed"] else "OUTSIDE the gate")
            )
        out_console.print(f"bundles and scaling.json in {target}")
    raise typer.Exit(0 if report["passed"] else 1)


def _fmt(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.4g}{unit}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def version_callback(value: bool) -> None:
    if value:
        print(f"parity {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback, is_eager=True, help="print the version"
        ),
    ] = False,
) -> None:
    """parity: does the target run it, give the same results, go faster, cost less?"""


def main() -> None:
    args = sys.argv[1:]
    if "--" in args:  # script mode: what follows ``--`` is the script's command
        SCRIPT_ARGV[:] = args[args.index("--") + 1 :]
        args = args[: args.index("--")]
        if not {"compare", "run"} & set(args):
            err_console.print("parity: error: only compare and run take a script after --")
            sys.exit(2)
    try:
        app(args=args, standalone_mode=True)
    except KeyboardInterrupt:
        err_console.print("parity: interrupted")
        sys.exit(130)
