"""The ``parity`` command line: parse, call ``parity.api``, map errors to exit codes.

Exit codes: 0 the target passes every gate; 1 it fails a gate or a side failed;
2 bad input or usage (one line on stderr naming the problem and the fix).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.status import Status
from rich.table import Table

from parity import __version__
from parity.errors import ParityError, UsageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="Move a PyTorch workload between accelerators with evidence: "
    "compatibility, numerics, performance and cost, side by side.",
)
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
AllowOpt = Annotated[
    list[str] | None,
    typer.Option("--allow-diff", help='accept a differing fingerprint field: FIELD="reason"'),
]


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
    name: str, size: str, batch_size: int | None, seq_len: int | None, steps: int | None, seed: int
) -> Any:
    from parity.spec import WorkloadSpec

    return WorkloadSpec(
        name=name, size=size, batch_size=batch_size, seq_len=seq_len, steps=steps, seed=seed
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
    ] = 45.0,
    compliance: Annotated[
        bool, typer.Option(help="run the target's re-seeded and identical-input checks")
    ] = True,
    timeout: TimeoutOpt = 900.0,
    as_json: JsonOpt = False,
) -> None:
    """Run a workload on a baseline and a target in fresh, interleaved processes; judge."""
    from parity import api
    from parity.report.terminal import curve_table, render
    from parity.runner.measure import Plan

    wspec = guarded(lambda: workload_spec(workload, size, batch_size, seq_len, steps, seed))
    try:
        plan = Plan(
            repeats=repeats,
            precision=precision,
            budget_s=budget,
            compliance=compliance,
            timeout_s=timeout,
        )
    except ValueError as exc:
        fail_usage(str(exc))
    target_spec = target or api.default_target()
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
            )
        )
    verdict = result.verdict
    if as_json:
        print(api.verdict_json(verdict))
    else:
        render(verdict.to_dict(), out_console)
        out_console.print(f"bundles and verdict.json in {result.out}")
    raise typer.Exit(verdict.exit_code)


@app.command()
def run(
    workload: Annotated[str, typer.Argument(help="built-in name or path/to/file.py:factory")],
    device: Annotated[str, typer.Option("--device", help="side spec, e.g. cpu+bf16")],
    out: Annotated[Path, typer.Option(help="bundle directory to create (new or empty)")],
    size: SizeOpt = "tiny",
    batch_size: BatchOpt = None,
    seq_len: SeqOpt = None,
    steps: StepsOpt = None,
    seed: SeedOpt = 0,
    timeout: TimeoutOpt = 900.0,
) -> None:
    """Run a workload on one side and write its bundle."""
    from parity import api
    from parity.report.terminal import fmt_s

    wspec = guarded(lambda: workload_spec(workload, size, batch_size, seq_len, steps, seed))
    with live_progress(True) as progress:
        bundle = guarded(lambda: api.run(wspec, device, out, timeout_s=timeout, progress=progress))
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
    as_json: JsonOpt = False,
) -> None:
    """Judge two existing bundles, e.g. made on two machines."""
    from parity import api
    from parity.report.terminal import render

    verdict = guarded(lambda: api.diff(bundle_a, bundle_b, allow_diff=allow_diff))
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
    try:
        app(standalone_mode=True)
    except KeyboardInterrupt:
        err_console.print("parity: interrupted")
        sys.exit(130)
