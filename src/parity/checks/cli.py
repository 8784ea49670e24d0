"""``parity check rollback | recovery | soak``: a Typer sub-app that ``parity.cli`` attaches.

Exit codes as everywhere: 0 the check passes, 1 it fails (or a part failed), 2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from parity.checks import DEFAULT_MAX_DRIFT, DEFAULT_MAX_GROWTH_MIB, DEFAULT_WARMUP

check_app = typer.Typer(
    no_args_is_help=True,
    help="What a migration must still prove: rollback to the baseline, recovery from a "
    "kill, sustained load. Each writes check.json and its bundles under --out; a passing "
    "check ticks the verdict's not-yet-proven list (parity compare --checks DIR).",
)

Workload = Annotated[str, typer.Argument(help="built-in name or path/to/file.py:factory")]
Size = Annotated[str, typer.Option("--size", help="tiny | small | base")]
Batch = Annotated[int | None, typer.Option("--batch-size", help="override the batch size")]
Seq = Annotated[int | None, typer.Option("--seq-len", help="override the sequence length")]
Seed = Annotated[int, typer.Option("--seed", help="seed of weights and data")]
Out = Annotated[Path | None, typer.Option("--out", help="output directory (new or empty)")]
K = Annotated[
    int | None, typer.Option("--k", help="steps before the checkpoint (default: half the steps)")
]
M = Annotated[
    int | None, typer.Option("--m", help="steps after the checkpoint (default: the rest)")
]
Timeout = Annotated[
    float, typer.Option("--timeout", help="seconds per part before it is stopped as failed")
]
AsJson = Annotated[bool, typer.Option("--json", help="print check.json on stdout")]


def _spec(workload: str, size: str, batch: int | None, seq: int | None, seed: int) -> Any:
    from parity.spec import WorkloadSpec

    return WorkloadSpec(name=workload, size=size, batch_size=batch, seq_len=seq, seed=seed)


def _show(result: Any, as_json: bool) -> None:
    from parity.cli import out_console

    data = result.data
    if as_json:
        print(json.dumps(data, indent=2))
    else:
        mark = "PASS" if data["passed"] else "FAIL"
        out_console.print(f"parity check {data['check']}: {mark}", markup=False, highlight=False)
        for gate in data["gates"]:
            tick = "ok  " if gate["passed"] else "FAIL"
            out_console.print(
                f"  {tick} {gate['name']}: {gate.get('detail', '')}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        out_console.print(f"check.json and bundles in {result.out}", markup=False)
    raise typer.Exit(result.exit_code)


@check_app.command()
def rollback(
    workload: Workload,
    target: Annotated[str, typer.Option("--target", help="side that trains first, e.g. cuda")],
    baseline: Annotated[str, typer.Option("--baseline", help="side that resumes")] = "cpu",
    k: K = None,
    m: M = None,
    size: Size = "tiny",
    batch_size: Batch = None,
    seq_len: Seq = None,
    seed: Seed = 0,
    out: Out = None,
    timeout: Timeout = 900.0,
    as_json: AsJson = False,
) -> None:
    """Train on the target, checkpoint, resume on the baseline, compare the curves.

    K steps on the target, a checkpoint (safetensors + JSON), M steps resumed on the
    baseline, compared with the baseline's uninterrupted K+M steps through the loss gate.
    """
    from parity.checks.rollback import rollback as run_rollback
    from parity.cli import guarded, live_progress

    wspec = guarded(lambda: _spec(workload, size, batch_size, seq_len, seed))
    with live_progress(True) as progress:
        result = guarded(
            lambda: run_rollback(
                wspec, target, baseline, k=k, m=m, out=out, timeout_s=timeout, progress=progress
            )
        )
    _show(result, as_json)


@check_app.command()
def recovery(
    workload: Workload,
    device: Annotated[str, typer.Option("--device", help="side spec to check, e.g. neuron")],
    k: K = None,
    m: M = None,
    size: Size = "tiny",
    batch_size: Batch = None,
    seq_len: Seq = None,
    seed: Seed = 0,
    out: Out = None,
    timeout: Timeout = 900.0,
    as_json: AsJson = False,
) -> None:
    """Kill a run after its checkpoint, resume it, compare the curves.

    The parent sends SIGKILL once the worker reports its checkpoint at step K; a fresh
    process resumes from it, and its curve is compared with an uninterrupted run's.
    """
    from parity.checks.recovery import recovery as run_recovery
    from parity.cli import guarded, live_progress

    wspec = guarded(lambda: _spec(workload, size, batch_size, seq_len, seed))
    with live_progress(True) as progress:
        result = guarded(
            lambda: run_recovery(
                wspec, device, k=k, m=m, out=out, timeout_s=timeout, progress=progress
            )
        )
    _show(result, as_json)


@check_app.command()
def soak(
    workload: Workload,
    device: Annotated[str, typer.Option("--device", help="side spec to check, e.g. cuda+bf16")],
    duration: Annotated[
        str, typer.Option("--duration", help="how long to run: 30s, 10m, 1h, 1h30m")
    ] = "10m",
    max_drift: Annotated[
        float,
        typer.Option("--max-drift", help="latency drift bound, relative per hour (0.1 = 10%/h)"),
    ] = DEFAULT_MAX_DRIFT,
    max_host_growth: Annotated[
        float, typer.Option("--max-host-growth", help="host RSS growth bound, MiB per minute")
    ] = DEFAULT_MAX_GROWTH_MIB,
    max_device_growth: Annotated[
        float,
        typer.Option("--max-device-growth", help="device allocated growth bound, MiB per minute"),
    ] = DEFAULT_MAX_GROWTH_MIB,
    warmup: Annotated[
        float, typer.Option("--warmup", help="fraction of the run left out of the slopes")
    ] = DEFAULT_WARMUP,
    size: Size = "tiny",
    batch_size: Batch = None,
    seq_len: Seq = None,
    seed: Seed = 0,
    out: Out = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="seconds beyond --duration before it is stopped")
    ] = 900.0,
    as_json: AsJson = False,
) -> None:
    """Sustained inference or generation: latency drift and memory growth.

    Slopes with 95% intervals; fails when drift or growth lies beyond its bound.
    """
    from parity.checks.common import parse_duration
    from parity.checks.soak import soak as run_soak
    from parity.cli import guarded, live_progress

    wspec = guarded(lambda: _spec(workload, size, batch_size, seq_len, seed))
    seconds = guarded(lambda: parse_duration(duration))
    with live_progress(True) as progress:
        result = guarded(
            lambda: run_soak(
                wspec,
                device,
                seconds,
                out=out,
                warmup=warmup,
                max_drift=max_drift,
                max_host_growth=max_host_growth,
                max_device_growth=max_device_growth,
                timeout_s=timeout,
                progress=progress,
            )
        )
    _show(result, as_json)


ChecksOpt = Annotated[
    str | None,
    typer.Option(
        "--checks",
        help="check directories (parity check --out), comma-separated: each passing check "
        "on the same sides ticks the verdict's not-yet-proven list",
    ),
]


def check_dirs(text: str | None) -> list[Path] | None:
    """``--checks DIR1,DIR2``: validated paths, or None (UsageError names a bad one)."""
    if not text:
        return None
    from parity.checks.common import parse_check_dirs

    return parse_check_dirs(text)
