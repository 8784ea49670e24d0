"""CUDA checks; they run where a CUDA GPU is present (scripts/gpu-check runs them).

Figures go to ``record_property``: ``scripts/gpu-check`` reads them back from the JUnit
XML file into its summary.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest
import torch

from parity.devices import get_device
from parity.model.job import CheckpointPlan, TimingPlan
from parity.probes.timing import StepTimer
from tests.fixtures.jobs import run, workload_job

Record = Callable[[str, object], None]

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_cuda_adapter_reads_memory_after_sync() -> None:
    dev = get_device("cuda", 0)
    dev.check_available()
    dev.reset_peak_memory()
    x = torch.ones(1024, 1024, device="cuda")
    peaks = dev.memory_peaks()
    assert peaks.allocated is not None and peaks.allocated >= x.numel() * 4
    now = dev.memory_allocated()
    assert now is not None and now >= x.numel() * 4
    assert dev.name().startswith("NVIDIA") or torch.version.hip
    assert dev.environment().flags["cuda_version"] or torch.version.hip


def test_cuda_rng_state_round_trips() -> None:
    dev = get_device("cuda", 0)
    state = dev.rng_state()
    assert state is not None
    a = torch.rand(4, device="cuda")
    dev.set_rng_state(state)
    assert torch.equal(torch.rand(4, device="cuda"), a)


def _matmuls_of(ms: float) -> tuple[Callable[[int], None], int]:
    """A step of ``k`` bf16 4096x4096 matrix products lasting about ``ms`` milliseconds."""
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    for _ in range(200):  # clocks up from idle before the calibration
        torch.mm(a, b, out=out)
    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    start.record()
    for _ in range(20):
        torch.mm(a, b, out=out)
    end.record()
    end.synchronize()
    k = max(1, round(ms / (start.elapsed_time(end) / 20)))

    def step(_: int) -> None:
        for _ in range(k):
            torch.mm(a, b, out=out)

    return step, k


#: what the host adds to a timed step (the synchronize's round trip, the launches before
#: the first kernel runs): on the lent H200 (2026-12-04, benchmarks/README.md) 22 and 40 us
#: at 1 ms, 67 us at 6 ms, so up to 0.1 ms; a timer that did not synchronize would read
#: the launch time alone, under the events
HOST_OVERHEAD_MS = 0.1


def _timed_against_events(ms: float) -> tuple[float, float, int]:
    """The median of parity's timer and of CUDA events around the same ~``ms`` steps."""
    dev = get_device("cuda", 0)
    work, k = _matmuls_of(ms)
    pairs: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    def step(i: int) -> None:
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        work(i)
        end.record()
        pairs.append((start, end))

    timer = StepTimer(step, dev.synchronize)
    timer.run(0, 50)  # warm-up: clocks up, cuBLAS handles made
    pairs.clear()
    samples = timer.run(50, 200)
    host_ms = statistics.median(samples) / 1e6
    event_ms = statistics.median(s.elapsed_time(e) for s, e in pairs)
    return host_ms, event_ms, k


@pytest.mark.parametrize("ms", [1.0, 5.0])
def test_step_timer_agrees_with_cuda_events(ms: float, record_property: Record) -> None:
    """parity's timer (perf_counter_ns around the step and a synchronize) against CUDA
    events around the same work, step by step. A timer that read the clock before the
    device finished would read the launch time, far less than the events: the timer never
    reads under the events by more than 2%. Above them it reads the host's overhead (the
    synchronize's round trip, the launches): at most ``HOST_OVERHEAD_MS``, and within 2% of
    the events on a 5 ms step."""
    host_ms, event_ms, k = _timed_against_events(ms)
    ratio = host_ms / event_ms
    tag = f"timing_{ms:g}ms"
    record_property(f"{tag}_events", round(event_ms, 4))
    record_property(f"{tag}_timer", round(host_ms, 4))
    record_property(f"{tag}_overhead_us", round((host_ms - event_ms) * 1e3, 1))
    record_property(f"{tag}_matmuls_per_step", k)
    assert ms / 2 <= event_ms <= ms * 2, f"the step should last about {ms} ms, not {event_ms:.3f}"
    assert ratio >= 0.98, f"timer {host_ms:.4f} ms under events {event_ms:.4f} ms: no sync?"
    assert host_ms - event_ms <= HOST_OVERHEAD_MS, (
        f"timer {host_ms:.4f} ms vs events {event_ms:.4f} ms: more than the host's overhead"
    )
    if ms >= 5:
        assert ratio <= 1.02, f"timer {host_ms:.4f} ms vs events {event_ms:.4f} ms"


def test_memory_peak_after_sync_matches_the_allocator(record_property: Record) -> None:
    """The adapter's peak, read after a synchronize, is the allocator's own
    max_memory_allocated, counts a buffer freed before the reading, and forgets what came
    before the reset."""
    dev = get_device("cuda", 0)
    mib = 1 << 20
    before = torch.empty(1024 * mib, dtype=torch.uint8, device="cuda")
    del before
    dev.reset_peak_memory()
    base = torch.cuda.memory_allocated()
    kept = torch.ones(64 * mib // 4, device="cuda")
    transient = kept * 2  # queued; freed before the reading
    del transient
    peaks = dev.memory_peaks()
    allocator = torch.cuda.max_memory_allocated()
    record_property("memory_peak_bytes", peaks.allocated)
    record_property("memory_allocator_peak_bytes", allocator)
    assert peaks.allocated == allocator
    assert base + 128 * mib <= allocator < base + 1024 * mib
    assert peaks.reserved == torch.cuda.max_memory_reserved()
    del kept


@pytest.mark.parametrize(
    ("op", "setting"), [("matmul", "ieee"), ("matmul", "tf32"), ("conv", "ieee"), ("conv", "tf32")]
)
def test_recorded_fp32_math_is_what_the_gpu_does(
    op: Literal["matmul", "conv"], setting: str, record_property: Record
) -> None:
    """The adapter's record of an fp32 op's format against the op's error on the GPU:
    IEEE fp32 lands near 1e-7 of an fp64 result (Winograd-type convolutions near 1e-6),
    TF32 (10-bit mantissa) near 3e-4: 3e-5 tells them apart."""
    # torch's stubs lack cudnn.conv (the fp32_precision API of torch >= 2.9)
    backend = torch.backends.cuda.matmul if op == "matmul" else torch.backends.cudnn.conv  # type: ignore[attr-defined]
    saved = backend.fp32_precision
    backend.fp32_precision = setting
    try:
        mode = get_device("cuda", 0).environment().flags[f"{op}_fp32_math"]
        gen = torch.Generator().manual_seed(0)
        if op == "matmul":
            a, b = (torch.randn(512, 512, generator=gen, dtype=torch.float64) for _ in "ab")
            ref = a @ b
            got = a.float().cuda() @ b.float().cuda()
        else:
            x = torch.randn(8, 64, 32, 32, generator=gen, dtype=torch.float64)
            w = torch.randn(64, 64, 3, 3, generator=gen, dtype=torch.float64)
            ref = torch.nn.functional.conv2d(x, w, padding=1)
            got = torch.nn.functional.conv2d(x.float().cuda(), w.float().cuda(), padding=1)
        rel = float((got.double().cpu() - ref).norm() / ref.norm())
    finally:
        backend.fp32_precision = saved
    record_property(f"{op}_{setting}_recorded", mode)
    record_property(f"{op}_{setting}_rel_error", f"{rel:.2e}")
    cublas_override = os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1"
    assert mode == ("tf32" if op == "matmul" and cublas_override else setting)
    # a recorded "ieee" must be IEEE; TF32-sized error must be recorded as tf32 (cuDNN
    # may still pick a kernel without tensor cores when TF32 is allowed)
    assert rel <= 3e-5 or mode == "tf32", f"{op}: error {rel:.2e} under recorded {mode}"
    if op == "matmul" and mode == "tf32":
        assert rel > 3e-5, f"cuBLAS with TF32 allowed gave IEEE-sized error {rel:.2e}"


@pytest.mark.slow
def test_a_cuda_side_runs_in_a_worker(tmp_path: Path) -> None:
    bundle = run(workload_job("cnn-infer", "cuda", TimingPlan(capture=True)), tmp_path)
    assert bundle.ok, bundle.manifest.reason
    assert bundle.metrics is not None and bundle.capture is not None
    peaks = bundle.metrics.memory.steps.device
    assert peaks.allocated is not None and peaks.allocated > 0
    resolved = bundle.manifest.resolved
    assert resolved is not None and resolved.matmul == "fp32"
    # cuDNN convolutions run fp32 in TF32 by default: the manifest says so
    assert resolved.conv == "tf32"
    assert bundle.capture.available and bundle.capture.layers


@pytest.mark.slow
def test_a_cuda_checkpoint_restores_the_device_generator(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    first = workload_job("mlp-train", "cuda", CheckpointPlan(), steps=6)
    saved = run(
        replace(first, plan=CheckpointPlan(stop_at=3, save_at=3, checkpoint_dir=str(ckpt))),
        tmp_path,
        "first",
    )
    assert saved.ok, saved.manifest.reason
    resumed = run(replace(first, plan=CheckpointPlan(resume_from=str(ckpt))), tmp_path, "b")
    whole = run(first, tmp_path, "whole")
    assert resumed.ok and whole.ok
    assert resumed.losses == pytest.approx(whole.losses, rel=1e-5)
