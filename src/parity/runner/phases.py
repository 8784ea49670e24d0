"""The worker's phase loop: set up the side, load, first step, warm-up, steady state."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn

from parity import __version__
from parity.bundle import MANIFEST, SCHEMA_VERSION, write_json
from parity.devices import get_device
from parity.devices.base import Device
from parity.devices.specs import peak_flops
from parity.plugins import load_plugins
from parity.probes import environment, memory
from parity.probes.determinism import RefusalRecorder
from parity.probes.emulate import EmulateMode
from parity.probes.flops import count_flops, mfu
from parity.probes.latency import generation_metrics, step_latency
from parity.probes.numerics import capture
from parity.probes.scan import arm_failure_scan, scan_after_steps, scan_only
from parity.probes.timing import StepTimer
from parity.runner import distributed
from parity.runner.job import EVENTS_FILE, Job
from parity.spec import SideSpec, WorkloadSpec, parse_side
from parity.stats import detect_steady, summarize
from parity.workloads import resolve
from parity.workloads.base import RunContext, RunNumerics, Workload
from parity.workloads.frozen import read_frozen

NS = 1e-9


class Events:
    """Append-only ``events.jsonl``: the parent tails it for the live display."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("a", buffering=1)

    def emit(self, event: str, **fields: Any) -> None:
        self.file.write(
            json.dumps({"t_ns": time.perf_counter_ns(), "event": event, **fields}) + "\n"
        )


def configure(side: SideSpec, device: Device) -> dict[str, Any]:
    """Apply the side's process-wide settings; return what was set."""
    settings: dict[str, Any] = {}
    if side.threads is not None:
        torch.set_num_threads(side.threads)
    settings["threads"] = torch.get_num_threads()
    if side.deterministic:
        settings["determinism"] = device.enable_determinism()
        # warn-only: a run goes on past an op that refuses, and the refusals are recorded
        torch.use_deterministic_algorithms(True, warn_only=True)
    settings["deterministic"] = torch.are_deterministic_algorithms_enabled()
    settings["precision"] = side.precision
    settings["autocast_device_type"] = device.autocast_type if side.precision != "fp32" else None
    if side.compile:
        settings["compile_backend"] = side.compile_backend or device.default_compile_backend
    settings["emulate"] = side.emulate
    return settings


def load_model(workload: Workload, weights: dict[str, torch.Tensor]) -> nn.Module:
    """Build the model on the CPU and copy the frozen weights into it.

    (Building on the meta device would skip initialisation, but its first use costs
    about a second of one-off set-up in torch, more than initialising a small model.)
    """
    model = workload.build_model()
    model.load_state_dict(weights, strict=True)
    return model


def compile_module(model: nn.Module, *, backend: str) -> nn.Module:
    compiled: nn.Module = torch.compile(model, backend=backend)  # type: ignore[assignment]
    return compiled


def run_side(job: Job, out: Path, *, started_ns: int, set_phase: Callable[[str], None]) -> None:
    events = Events(out / EVENTS_FILE)
    load_plugins()
    side = parse_side(job.side, check_device=False)
    device = get_device(side.device, side.index)
    set_phase("setup")
    events.emit("phase", phase="setup")
    device.check_available()
    dinfo = distributed.setup(device) if job.settings.get("mode") != "reference" else None
    if dinfo is not None and side.device != "cpu":
        device = get_device(side.device, dinfo.local_rank)  # one device per process
    device.activate()
    settings = configure(side, device)
    workload = resolve(WorkloadSpec.from_dict(job.workload))
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "parity_version": __version__,
        "status": "incomplete",
        "reason": "the worker did not finish",
        "role": job.role,
        "repeat": job.repeat,
        "side": side.to_dict(),
        "workload": {
            "spec": job.workload,
            "fingerprint": job.fingerprint,
            "parts": job.parts,
            "description": job.description,
        },
        "environment": environment.collect(device),
        "settings": {
            **settings,
            **job.settings,
            "steps": workload.steps,
            "items_per_step": workload.items_per_step(),
        },
        "started_unix": time.time(),
        "pid": os.getpid(),
    }
    leader = dinfo is None or dinfo.leader
    if dinfo is not None:
        manifest["distributed"] = dinfo.to_dict()
    if leader:
        write_json(out / MANIFEST, manifest)
    if job.settings.get("mode") == "reference":
        run_reference(workload, Path(job.frozen), job.fingerprint, out, set_phase)
        manifest.update(status="ok", reason=None, finished_unix=time.time())
        write_json(out / MANIFEST, manifest)
        return
    now = time.perf_counter_ns()
    startup = {
        # parent's launch to ready: interpreter start, imports, device init, settings
        "start_import_s": (now - job.spawned_ns) * NS if job.spawned_ns else None,
        # the worker module's first line to ready (perf_counter is process-local off Linux)
        "worker_import_s": (now - started_ns) * NS,
    }

    set_phase("load")
    events.emit("phase", phase="load")
    memory.reset_host_peak()
    t0 = time.perf_counter_ns()
    frozen = read_frozen(Path(job.frozen))
    if frozen.fingerprint != job.fingerprint:
        raise RuntimeError("the frozen workload changed on disk since the parent froze it")
    weights, data = frozen.load()
    model = load_model(workload, weights).to(device.torch_device)
    data = {k: v.to(device.torch_device) for k, v in data.items()}
    full_data = data
    if dinfo is not None:  # the global batch stays the workload's: each rank takes a slice
        data = distributed.shard(data, workload.batch_size, dinfo)
        if workload.kind == "train":
            model = distributed.wrap(model, device, dinfo, side.fsdp)
    device.synchronize()
    load_ns = time.perf_counter_ns() - t0
    mem_load = {"device": device.memory_peaks(), "host_peak_rss": memory.host_peak_rss()}

    ctx = RunContext(
        device=device.torch_device,
        side=side,
        autocast_type=device.autocast_type,
        synchronize=device.synchronize,
    )
    if side.compile:
        backend = settings["compile_backend"]
        ctx.compile_fn = partial(compile_module, backend=backend)
        model = ctx.compile_fn(model)
    runner = workload.make_runner(model, data, ctx)
    mode = EmulateMode(side.emulate) if side.emulate else contextlib.nullcontext()
    if job.settings.get("mode") == "scan":  # parity scan: the op scan instead of timed steps
        return scan_only(out, manifest, runner, model, device, set_phase, events.emit)
    if job.settings.get("mode") in ("train_ckpt", "soak"):  # parity check: runner/checkpoint.py
        from parity.runner.checkpoint import ModeRun, run_check_mode

        return run_check_mode(
            ModeRun(
                job=job,
                out=out,
                manifest=manifest,
                workload=workload,
                runner=runner,
                device=device,
                mode=mode,
                emit=events.emit,
                set_phase=set_phase,
                startup=startup,
                load_ns=load_ns,
            )
        )
    arm_failure_scan(out, runner, model, device, manifest, timeout_s=job.settings.get("timeout_s"))

    device.reset_peak_memory()
    memory.reset_host_peak()
    # the anti-caching compliance run feeds one identical input at every step
    step = (lambda i: runner.step(0)) if job.settings.get("same_input") else runner.step
    timer = StepTimer(step, device.synchronize)
    refusals = RefusalRecorder(side.deterministic)
    with mode, refusals:
        set_phase("first step")
        events.emit("phase", phase="first step", steps=workload.steps)
        samples = timer.run(0, 1)
        # memory per phase: the first step (compile, graph capture) apart from the rest
        mem_first = {"device": device.memory_peaks(), "host_peak_rss": memory.host_peak_rss()}
        device.reset_peak_memory()
        memory.reset_host_peak()
        set_phase("steps")
        events.emit("phase", phase="steps", steps=workload.steps)
        chunk = max(1, workload.steps // 10)
        for start in range(1, workload.steps, chunk):
            samples += timer.run(start, min(chunk, workload.steps - start))
            events.emit("progress", done=len(samples), steps=workload.steps)
        mem_steps = {"device": device.memory_peaks(), "host_peak_rss": memory.host_peak_rss()}
        set_phase("finish")
        numerics = runner.finish()
        if dinfo is not None:
            dist_metrics = distributed_figures(
                numerics, model, timer, workload.steps, samples, dinfo
            )
            if not dinfo.leader:  # rank 0 writes the bundle
                distributed.teardown()
                return

    set_phase("flops")
    # the global batch's FLOPs, counted once per side (first repeat): a property of the
    # workload, and counting on meta tensors costs about a second of one-off set-up
    flops: dict[str, Any] = {"per_step": None, "method": "counted in the first repeat"}
    if job.repeat == 0 and not job.settings.get("compliance"):
        flops = count_flops(workload, full_data)
    peak = peak_flops(device.name(), device.matmul_dtype(side.precision))
    mem = {"load": mem_load, "first_step": mem_first, "steps": mem_steps}
    metrics = build_metrics(samples, workload, startup, load_ns, mem)
    steady_steps = slice(metrics["steady_from_step"], None)
    token_times = runner.token_times_ns()
    if token_times is not None:
        metrics["generation"] = generation_metrics(token_times[steady_steps], workload.batch_size)
    elif workload.kind == "infer":
        metrics["inference"] = step_latency(metrics["step_samples_s"][steady_steps])
    median = (metrics["summary"] or {}).get("median")
    metrics["flops"] = {**flops, **mfu(flops["per_step"], median, peak)}
    if dinfo is not None:
        metrics["distributed"] = dist_metrics
        # MFU per device: the step's FLOPs are the global batch's, spread over the ranks
        if metrics["flops"].get("mfu") is not None:
            metrics["flops"]["mfu"] /= dinfo.world
    write_json(out / "metrics.json", metrics)
    write_numerics(out, numerics)
    if job.settings.get("capture"):
        set_phase("numerics probe")
        events.emit("phase", phase="numerics probe")
        probe, tensors = run_probe(
            workload,
            lambda: load_model(workload, weights).to(device.torch_device),
            full_data,
            ctx,
            compile_fn=ctx.compile_fn if side.compile else None,
            emulate=side.emulate,
        )
        write_capture(out, probe, tensors)
    # the op scan (ops.json): after timing, finish and numerics, so it touches neither
    if dinfo is None:  # the scan's extra steps would be collective under DDP: single process only
        set_phase("scan")
        events.emit("phase", phase="scan")
        scan_after_steps(
            out,
            runner,
            model,
            device,
            manifest,
            start=workload.steps,
            graphs=job.repeat == 0 and not job.settings.get("compliance"),
        )
    manifest.update(status="ok", reason=None, finished_unix=time.time())
    if side.emulate:
        manifest["settings"]["emulated_calls"] = getattr(mode, "calls", 0)
    if side.deterministic:
        manifest["settings"]["nondeterministic_ops"] = refusals.ops
    events.emit("phase", phase="done")
    write_json(out / MANIFEST, manifest)
    if dinfo is not None:
        distributed.teardown()


def distributed_figures(
    numerics: RunNumerics,
    model: nn.Module,
    timer: StepTimer,
    steps: int,
    samples: list[int],
    dinfo: distributed.DistInfo,
) -> dict[str, Any]:
    """Collective, on every rank: the global loss curve, per-rank step times, and the
    all-reduce share (a few more steps, after timing and numerics)."""
    numerics.losses = distributed.mean_losses(numerics.losses, dinfo)
    share = distributed.allreduce_share(model, timer.run, start=steps)
    per_rank = distributed.gather(
        {
            "rank": dinfo.rank,
            "median_step_s": sorted(samples[1:])[len(samples[1:]) // 2] * NS
            if len(samples) > 1
            else None,
        }
    )
    return {**dinfo.to_dict(), "per_rank": per_rank, "allreduce": share}


def run_probe(
    workload: Workload,
    fresh_model: Callable[[], nn.Module],
    data: dict[str, torch.Tensor],
    ctx: RunContext,
    *,
    compile_fn: Callable[[nn.Module], nn.Module] | None = None,
    emulate: str | None = None,
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The numerics probe, or why a workload has none."""
    mode = partial(EmulateMode, emulate) if emulate else contextlib.nullcontext
    try:
        return capture(workload, fresh_model, data, ctx, compile_fn=compile_fn, mode=mode)
    except NotImplementedError as exc:
        return {"error": str(exc)}, {}


def run_reference(
    workload: Workload,
    frozen_dir: Path,
    fingerprint: str,
    out: Path,
    set_phase: Callable[[str], None],
) -> None:
    """The fp64 CPU reference: the numerics probe with the model and float data in float64."""
    set_phase("reference")
    frozen = read_frozen(frozen_dir)
    if frozen.fingerprint != fingerprint:
        raise RuntimeError("the frozen workload changed on disk since the parent froze it")
    weights, data = frozen.load()
    data64 = {k: v.double() if v.is_floating_point() else v for k, v in data.items()}
    ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
    probe, tensors = run_probe(
        workload, lambda: load_model(workload, weights).double(), data64, ctx
    )
    write_json(out / "metrics.json", {"reference": True, "dtype": "float64", "device": "cpu"})
    write_json(out / "numerics.json", {"losses": [], "outputs": {}, "extra": {}})
    write_capture(out, probe, tensors)


def write_capture(out: Path, probe: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    write_json(out / "capture.json", probe)
    if tensors:
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / "capture.safetensors"))


def build_metrics(
    samples_ns: list[int],
    workload: Workload,
    startup: dict[str, float | None],
    load_ns: int,
    mem: dict[str, Any],
) -> dict[str, Any]:
    seconds = [s * NS for s in samples_ns]
    rest = seconds[1:]
    steady = detect_steady(rest) if rest else None
    start = steady.start if steady else 0
    steady_samples = rest[start:]
    summary = summarize(steady_samples) if steady_samples else None
    items = workload.items_per_step()
    throughput: dict[str, float | None] = {"samples_per_s": None, "tokens_per_s": None}
    if summary is not None and summary.median > 0:
        throughput["samples_per_s"] = items["samples"] / summary.median
        throughput["tokens_per_s"] = items["tokens"] / summary.median if items["tokens"] else None
    metrics = {
        "units": "seconds",
        "phases": {
            **startup,
            "load_s": load_ns * NS,
            "first_step_s": seconds[0],
            "warmup_s": sum(rest[:start]),
            "warmup_steps": start,
            "steady_s": sum(steady_samples),
            "steady_steps": len(steady_samples),
        },
        "steady_state": (steady.to_dict() if steady else None),
        "steady_from_step": 1 + start,
        "step_samples_s": seconds,
        "summary": summary.to_dict() if summary else None,
        "noise_warnings": summary.warnings() if summary else [],
        "items_per_step": items,
        "throughput": throughput,
        "memory": mem,
    }
    return metrics


def write_numerics(out: Path, numerics: RunNumerics) -> None:
    tensors = {k: v.detach().cpu().contiguous() for k, v in numerics.outputs.items()}
    summaries = {}
    for name, t in tensors.items():
        f = t.double()
        finite = bool(torch.isfinite(f).all()) if f.numel() else True
        summaries[name] = {
            "shape": list(t.shape),
            "dtype": str(t.dtype).removeprefix("torch."),
            "finite": finite,
            "mean": float(f.mean()) if f.numel() and finite else None,
            "std": float(f.std()) if f.numel() > 1 and finite else None,
            "min": float(f.min()) if f.numel() and finite else None,
            "max": float(f.max()) if f.numel() and finite else None,
        }
    losses = [x if x == x and abs(x) != float("inf") else None for x in numerics.losses]
    write_json(
        out / "numerics.json", {"losses": losses, "outputs": summaries, "extra": numerics.extra}
    )
    if tensors:
        save_file(tensors, str(out / "numerics.safetensors"))
