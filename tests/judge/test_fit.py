"""Fit at production size from typed measurements (no processes): the parts, the fit
against a stated device memory, the FSDP count."""

from __future__ import annotations

from dataclasses import replace

import pytest

from parity.judge.fit import Measured, Shape, judge_fit, project
from parity.model.fair import DeviceMemory, ProductionShape
from parity.model.findings import Finding
from parity.model.metrics import DevicePeaks, Memory, MemoryPhase
from parity.model.roles import ByRole
from parity.report import words
from tests.fixtures.bundles import workload_ref

P = 1_000_000  # measured parameters
RUNTIME = 1 << 20
PER_TOKEN = 1024  # bytes of activations a sample-token
DESCRIPTION = replace(
    workload_ref(batch_size=8, seq_len=64).description, parameters=P, optimizer="adamw"
)
PRODUCTION = ProductionShape(
    parameters=1_300_000_000, seq_len=2048, batch_size=8, precision="bf16", optimizer="adamw"
)


def device_side(memory: int | None) -> Measured:
    load = RUNTIME + 4 * P
    steps = load + 4 * P + 8 * P + PER_TOKEN * 8 * 64
    phases = Memory(
        load=MemoryPhase(device=DevicePeaks(allocated=load)),
        steps=MemoryPhase(device=DevicePeaks(allocated=steps)),
    )
    given = None if memory is None else DeviceMemory(bytes=memory, source="stated")
    return Measured(memory=phases, host=False, probed=True, precision="bf16", device_memory=given)


def test_training_parts_at_production_size() -> None:
    fit = judge_fit(
        DESCRIPTION,
        PRODUCTION,
        ByRole(baseline=device_side((80e9).__int__()), target=device_side(16 * 10**9)),
    )
    assert fit.available and fit.sides is not None
    a, b = fit.sides.baseline, fit.sides.target
    parts = {p.name: p.bytes for p in a.parts}
    n = 1_300_000_000
    assert parts["weights"] == 4 * n and parts["gradients"] == 4 * n
    assert parts["optimizer states"] == 8 * n
    assert parts["activations"] == PER_TOKEN * 8 * 2048
    assert parts["runtime"] == RUNTIME
    assert a.peak_bytes == 16 * n + PER_TOKEN * 8 * 2048 + RUNTIME == a.run_peak_bytes
    assert a.fits and a.margin_bytes == 80 * 10**9 - a.peak_bytes
    assert words.fit(a).startswith("fits: projected peak 19.4 GiB of 74.5 GiB")
    assert b.fits is False and b.margin_bytes is not None and b.margin_bytes < 0
    assert b.fsdp_devices == 2  # 20.8 GB of sharded states over two 16 GB devices
    assert "does not fit" in words.fit(b) and "fits on 2 devices with FSDP" in words.fit(b)


def test_unknown_device_memory_projects_without_judging_fit() -> None:
    fit = judge_fit(
        DESCRIPTION, PRODUCTION, ByRole(baseline=device_side(None), target=device_side(None))
    )
    assert fit.sides is not None and fit.sides.target.fits is None
    assert "device memory unknown" in words.fit(fit.sides.target)


def test_no_production_shape_no_projection() -> None:
    fit = judge_fit(DESCRIPTION, None, ByRole(baseline=device_side(None), target=device_side(None)))
    assert not fit.available and "no production shape" in words.fit_reason(fit)


def test_a_host_side_counts_parity_s_own_copies_in_the_run_only() -> None:
    load = 250 << 20
    weights = 4 * P
    steps = load + 12 * P + weights + PER_TOKEN * 8 * 64  # grads, AdamW, the probe's copy
    host = Measured(
        memory=Memory(load=MemoryPhase(host_peak_rss=load), steps=MemoryPhase(host_peak_rss=steps)),
        host=True,
        probed=True,
        precision="fp32",
        device_memory=None,
    )
    small = Shape.of(DESCRIPTION)
    assert small is not None
    big = small.production(ProductionShape(parameters=4 * P, batch_size=16))
    made = project(host, small, big, "fp32")
    assert not isinstance(made, Finding)
    only = {p.name for p in made.parts if p.parity_only}
    assert only == {"loaded frozen weights", "probe's starting weights"}
    assert made.run_peak_bytes - made.peak_bytes == 2 * 4 * 4 * P
    assert {p.name: p.bytes for p in made.parts}["runtime"] == load - 2 * weights
    assert {p.name: p.bytes for p in made.parts}["activations"] == PER_TOKEN * 16 * 64


def test_generation_projects_a_kv_cache() -> None:
    d = replace(
        workload_ref("gpt-generate", "generate", batch_size=4, seq_len=32).description,
        parameters=P,
        config={"n_layers": 2, "d_model": 32, "new_tokens": 32},
    )
    load = RUNTIME + 4 * P
    kv_m = 2 * 2 * 32 * 4 * 64 * 4
    memory = Memory(
        load=MemoryPhase(device=DevicePeaks(allocated=load)),
        steps=MemoryPhase(device=DevicePeaks(allocated=load + kv_m)),
    )
    m = Measured(memory=memory, host=False, probed=False, precision="fp32", device_memory=None)
    fit = judge_fit(
        d,
        ProductionShape(
            parameters=8 * P, batch_size=8, seq_len=100, max_new_tokens=28, precision="bf16"
        ),
        ByRole(baseline=m, target=m),
    )
    assert fit.sides is not None
    parts = {p.name: p.bytes for p in fit.sides.target.parts}
    # layers and width doubled (cube root of 8), 8 x 128 tokens, bf16
    assert parts["KV cache"] == 2 * 4 * 64 * 8 * 128 * 2
    assert parts["activations"] == 0  # the measured steps held the KV cache only
    assert "gradients" not in parts
    assert fit.sides.target.peak_bytes == pytest.approx(
        parts["weights"] + parts["KV cache"] + RUNTIME
    )


def test_a_model_without_a_sequence_scales_activations_by_batch_only() -> None:
    mlp = replace(DESCRIPTION, seq_len=None)
    load = RUNTIME + 4 * P
    memory = Memory(
        load=MemoryPhase(device=DevicePeaks(allocated=load)),
        steps=MemoryPhase(device=DevicePeaks(allocated=load + 12 * P + PER_TOKEN * 8)),
    )
    m = Measured(memory=memory, host=False, probed=False, precision="fp32", device_memory=None)
    fit = judge_fit(mlp, ProductionShape(seq_len=2048, batch_size=64), ByRole(baseline=m, target=m))
    assert fit.sides is not None
    assert {p.name: p.bytes for p in fit.sides.target.parts}["activations"] == PER_TOKEN * 64
