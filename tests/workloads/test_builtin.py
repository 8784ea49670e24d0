from __future__ import annotations

import itertools

import pytest
import torch

from parity.devices import get_device
from parity.errors import WorkloadError
from parity.model.spec import SideSpec, WorkloadSpec
from parity.probes.latency import generation_metrics
from parity.workloads import registered, resolve
from parity.workloads.base import RunContext, StepRunner
from parity.workloads.frozen import materialize
from parity.workloads.gpt import corpus_bytes
from parity.workloads.loops import GenerateLoop
from tests.conftest import HAVE_FAKEDEVICE, needs_fakedevice

if HAVE_FAKEDEVICE:
    from parity.testing import fakedevice


def _stepped(name: str, precision: str = "fp32", steps: int = 3) -> StepRunner:
    """The built-in's runner on the CPU after all its steps."""
    w = resolve(WorkloadSpec(name=name, steps=steps))
    weights, data = materialize(w)
    model = w.build_model()
    model.load_state_dict(weights)
    ctx = RunContext(
        device=torch.device("cpu"),
        side=SideSpec(device="cpu", precision=precision),
        autocast_type="cpu",
    )
    runner = w.make_runner(model, data, ctx)
    for i in range(w.steps):
        runner.step(i)
    return runner


def _run(
    name: str, precision: str = "fp32", steps: int = 3
) -> tuple[list[float], dict[str, torch.Tensor]]:
    result = _stepped(name, precision, steps).finish()
    return result.losses, result.outputs


def test_builtins_are_registered() -> None:
    assert {"mlp-train", "gpt-train", "gpt-generate", "cnn-infer"} <= set(registered())


@pytest.mark.parametrize(
    "name",
    ["mlp-train", "gpt-train", pytest.param("gpt-generate", marks=pytest.mark.slow), "cnn-infer"],
)
def test_each_builtin_runs_and_is_repeatable(name: str) -> None:
    losses_a, out_a = _run(name)
    losses_b, out_b = _run(name)
    assert losses_a == losses_b
    assert out_a.keys() == out_b.keys() and out_a
    for key in out_a:
        assert torch.equal(out_a[key], out_b[key])
        if out_a[key].is_floating_point():
            assert torch.isfinite(out_a[key]).all()


@pytest.mark.parametrize("name", ["mlp-train", pytest.param("gpt-train", marks=pytest.mark.slow)])
def test_training_reduces_the_loss(name: str) -> None:
    losses, _ = _run(name, steps=25)
    assert len(losses) == 25
    assert losses[-1] < losses[0] * 0.95


def test_generation_has_fixed_length_and_static_cache() -> None:
    _, out = _run("gpt-generate", steps=1)
    w = resolve(WorkloadSpec(name="gpt-generate"))
    assert out["tokens"].shape == (w.batch_size, w.config["new_tokens"])
    assert out["prefill_logits"].shape == (w.batch_size, 256)


def test_a_timing_process_hands_over_its_first_step_without_decoding_again() -> None:
    # finish() decodes every prompt once more and scores it (as long as the steps
    # again); a process whose outputs nothing reads gets the first step's own
    runner = _stepped("gpt-generate", steps=2)
    assert isinstance(runner, GenerateLoop)
    calls = 0
    real = runner.generate

    def counted(*args: object, **kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    runner.generate = counted  # type: ignore[method-assign]
    light = runner.finish_timing()
    assert calls == 0
    assert set(light.outputs) == {"tokens", "prefill_logits"}
    full = runner.finish()
    assert calls >= 1 and set(full.outputs) > set(light.outputs)
    for name in light.outputs:  # the same first step, whichever way it is handed over
        assert torch.equal(light.outputs[name], full.outputs[name])


def test_generation_matches_full_recompute() -> None:
    # the static KV cache must give the same next token as recomputing the whole prefix
    w = resolve(WorkloadSpec(name="gpt-generate", steps=1))
    weights, data = materialize(w)
    model = w.build_model()
    model.load_state_dict(weights)
    model.eval()
    ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
    runner = w.make_runner(model, data, ctx)
    runner.step(0)
    tokens = runner.finish().outputs["tokens"]
    seq = data["prompts"][0]
    with torch.no_grad():
        for t in range(4):
            nxt = model(seq)[:, -1].argmax(-1)
            assert torch.equal(nxt, tokens[:, t])
            seq = torch.cat([seq, nxt[:, None]], dim=1)


@needs_fakedevice
def test_token_times_ttft_and_itl_hold_the_work_each_token_queued() -> None:
    # Each token's time stamp must come after a synchronize: on the asynchronous
    # device, TTFT holds the prefill's queued kernels and every inter-token gap the
    # next token's. The kernels per token are counted on the synchronous device.
    cost_us = 2000.0
    w = resolve(
        WorkloadSpec(name="gpt-generate", batch_size=1, seq_len=8, overrides=(("new_tokens", "4"),))
    )
    weights, data = materialize(w)
    model = w.build_model()
    model.load_state_dict(weights)
    dev = torch.device("parityfake")
    model, prompts = model.to(dev), {"prompts": data["prompts"].to(dev)}
    marks: list[int] = []
    side = SideSpec(device="parityfake")

    def mark() -> None:
        marks.append(fakedevice.kernel_count())

    counting = RunContext(device=dev, side=side, autocast_type="parityfake", synchronize=mark)
    start = fakedevice.kernel_count()
    w.make_runner(model, prompts, counting).step(0)
    kernels = [b - a for a, b in itertools.pairwise([start, *marks])]
    assert len(kernels) == 4, "the runner synchronises once per token"

    sync = get_device("parityfake").synchronize
    ctx = RunContext(device=dev, side=side, autocast_type="parityfake", synchronize=sync)
    runner = w.make_runner(model, prompts, ctx)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a launch takes well under a kernel's cost, even on a busy host
    try:
        with fakedevice.asynchronous(cost_us):
            runner.step(0)
    finally:
        torch.set_num_threads(threads)
    times = runner.token_times_ns()
    assert times is not None
    stamps = times[0]
    spans = [stamps[0], *(b - a for a, b in itertools.pairwise(stamps))]
    floors = [k * cost_us * 1000 for k in kernels]
    pairs = [(span / 1e6, floor / 1e6) for span, floor in zip(spans, floors, strict=True)]
    assert all(span >= floor for span, floor in pairs), f"per token (ms, queued ms): {pairs}"
    # and the figures the worker derives from them (runner/phases.py)
    figures = generation_metrics(times, batch_size=1)
    ttft, itl, e2e = figures.ttft_s.p50, figures.itl_s.p50, figures.e2e_s.p50
    assert ttft is not None and itl is not None and e2e is not None
    assert ttft * 1e9 >= floors[0]
    assert figures.itl_s.n == 3 and itl * 1e9 >= min(floors[1:])
    assert e2e * 1e9 >= sum(floors)


def test_bf16_changes_numbers_but_not_much() -> None:
    _, a = _run("cnn-infer")
    _, b = _run("cnn-infer", precision="bf16")
    rel = (a["logits"] - b["logits"]).pow(2).mean().sqrt() / a["logits"].pow(2).mean().sqrt()
    assert 0 < float(rel) < 0.05


def test_corpus_is_real_text() -> None:
    text = corpus_bytes()
    assert 100_000 < len(text) <= 300_000
    assert text.isascii() and b" the " in text


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"name": "nope"}, "unknown workload 'nope'"),
        ({"name": "mlp-train", "seq_len": 8}, "has no sequence"),
        ({"name": "gpt-train", "overrides": (("n_head", "3"),)}, "has no setting 'n_head'"),
        ({"name": "gpt-train", "overrides": (("n_heads", "3"),)}, "multiple of n_heads"),
        ({"name": "missing.py:make"}, "does not exist"),
    ],
)
def test_workload_errors(knobs: dict[str, object], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        resolve(WorkloadSpec(**knobs))  # type: ignore[arg-type]
