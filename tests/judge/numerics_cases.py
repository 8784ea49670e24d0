"""Synthetic comparisons with an fp64 reference, an expected-error run and per-module
captures, for the golden verdicts of the numerics: seeded and fixed, in memory, no
workers and no files.

The model is a chain ``layers.0`` .. ``layers.3`` then ``head``: each module's input is
the previous one's output. Every side's values are the reference's plus a relative
error per module (see ``with_errors``); a fault is a large error in one module that the
modules after it inherit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from parity.bundle import repeat_name
from parity.model.bundle import Bundle, SideRuns
from parity.model.job import Mode
from parity.model.numerics import AfterRun, Capture, LayerRecord, TensorSummary
from parity.model.side import MeasurePlan, MeasureRecord, Stop
from tests.fixtures import bundles
from tests.judge.synthetic import LOSSES

NAMES = [*(f"layers.{i}" for i in range(4)), "head"]
Tensors = dict[str, torch.Tensor]
FP32 = [1e-7 * (i + 1) for i in range(len(NAMES))]
BF16 = [4e-3 * math.sqrt(i + 1) for i in range(len(NAMES))]


def _summary(t: torch.Tensor) -> TensorSummary:
    return TensorSummary(shape=tuple(t.shape), dtype="float32", numel=t.numel())


def reference_values() -> Tensors:
    """Each module's output (and input: the previous output) in fp64, and the logits."""
    g = torch.Generator().manual_seed(7)
    outs = [torch.randn(64, generator=g, dtype=torch.float64) for _ in NAMES]
    tensors = {f"layer.out.{n}": o for n, o in zip(NAMES, outs, strict=True)}
    tensors.update({f"layer.in.{n}": o for n, o in zip(NAMES[1:], outs, strict=False)})
    tensors["output.logits"] = outs[-1].view(4, 16)
    tensors["eval_logits"] = torch.randn(4, 10, generator=g, dtype=torch.float64) * 3
    return tensors


def with_errors(ref: Tensors, errors: list[float], seed: int, *, logits: float) -> Tensors:
    """``ref`` with a relative error per module output (inputs carry the previous one's),
    and ``logits`` on the outputs."""
    g = torch.Generator().manual_seed(seed)
    wanted = {f"layer.out.{n}": e for n, e in zip(NAMES, errors, strict=True)}
    wanted.update({f"layer.in.{n}": e for n, e in zip(NAMES[1:], errors, strict=False)})
    wanted.update({"output.logits": logits, "eval_logits": logits})
    out = {}
    for key, rel in wanted.items():
        x = ref[key]
        noise = torch.randn(x.shape, generator=g, dtype=torch.float64)
        scale = x.pow(2).mean().sqrt() / noise.pow(2).mean().sqrt()
        out[key] = (x + rel * scale * noise).float()
    return out


def capture(values: Tensors, after_run: Tensors | None) -> tuple[Capture, Tensors]:
    layers = tuple(
        LayerRecord(
            name=n,
            type="Linear",
            leaf=True,
            output=_summary(values[f"layer.out.{n}"]),
            input=_summary(values[f"layer.in.{n}"]) if f"layer.in.{n}" in values else None,
        )
        for n in NAMES
    )
    probe = {k: v for k, v in values.items() if k != "eval_logits"}
    outputs = {"logits": _summary(values["output.logits"])}
    after = None
    if after_run is not None:
        after = AfterRun(outputs=outputs, layers=layers)
        probe.update({f"after_run.{k}": v for k, v in after_run.items() if k != "eval_logits"})
    return Capture(outputs=outputs, layers=layers, after_run=after), probe


def make_run(
    root: Path,
    role: str,
    spec: str,
    *,
    losses: list[float],
    probe: Tensors,
    after_run: Tensors | None,
    mode: Mode = "measure",
    outputs: Tensors | None = None,
) -> Bundle:
    """One bundle (a side's r00, or a reference when ``mode`` says so); ``outputs``: what
    ``finish()`` returned (default: the ``eval_logits``)."""
    path = root / role / repeat_name(0) if mode == "measure" else root / role
    man = bundles.manifest(role=role, spec=spec, mode=mode)
    rng = torch.Generator().manual_seed(len(role))
    steps = (0.01 * (1 + 0.02 * torch.randn(40, generator=rng))).tolist()
    return bundles.make_bundle(
        path,
        man,
        run_metrics=bundles.metrics([0.2, *steps]),
        losses=list(losses),
        tensors={"eval_logits": probe["eval_logits"]} if outputs is None else outputs,
        capture=capture(probe, after_run),
    )


def make_side(root: Path, role: str, spec: str, **given: Any) -> SideRuns:
    """A side of one repeat (``make_run``'s), measured as asked."""
    stop = Stop(reason="repeats", message="1 repeat(s) per side, as asked")
    info = MeasureRecord(stop=stop, plan=MeasurePlan(repeats=1))
    run = make_run(root, role, spec, **given)
    return SideRuns(path=root / role, repeats=(run,), info=info)


Case = tuple[SideRuns, SideRuns, Bundle, Bundle | None]


def _curve(offsets: list[float]) -> list[float]:
    return [x + d for x, d in zip(LOSSES, offsets, strict=True)]


def fails_after_step_1(root: Path) -> Case:
    """fp32 on both sides; from step 2 on the target's module ``layers.2`` is off: its
    losses leave the fp64 trajectory at step 2, its first forward is clean."""
    ref = reference_values()
    base = with_errors(ref, FP32, 1, logits=1e-7)
    clean = with_errors(ref, FP32, 2, logits=1e-7)
    faulty = with_errors(ref, [*FP32[:2], 1e-2, 1.1e-2, 1.2e-2], 3, logits=1e-2)
    reference = make_run(
        root, "reference", "cpu", losses=LOSSES, probe=ref, after_run=None, mode="reference"
    )
    a = make_side(root, "baseline", "cuda", losses=_curve([1e-7] * 40), probe=base, after_run=base)
    drift = [1e-7 if i < 2 else 3e-3 * (i - 1) for i in range(40)]
    b = make_side(
        root,
        "target",
        "neuron",
        losses=_curve(drift),
        probe=clean | {"eval_logits": faulty["eval_logits"]},
        after_run=faulty,
    )
    return a, b, reference, None


def bf16_localisation(root: Path) -> Case:
    """An fp32 baseline and a bf16 target with a fault in ``layers.3``: every module of
    the target has bf16's error, which the expected-error run (the CPU at bf16) explains;
    ``layers.3`` alone is beyond it."""
    ref = reference_values()
    base = with_errors(ref, FP32, 1, logits=1e-7)
    expected = with_errors(ref, BF16, 2, logits=4e-3)
    faulty = with_errors(ref, [*[1.3 * e for e in BF16[:3]], 8e-2, 8.5e-2], 3, logits=8e-2)
    reference = make_run(
        root, "reference", "cpu", losses=LOSSES, probe=ref, after_run=None, mode="reference"
    )
    exp = make_run(
        root,
        "expected",
        "cpu+bf16",
        losses=_curve([2e-3] * 40),
        probe=expected,
        after_run=None,
        mode="expected",
    )
    a = make_side(root, "baseline", "cuda", losses=_curve([1e-7] * 40), probe=base, after_run=base)
    b = make_side(
        root, "target", "neuron+bf16", losses=_curve([2.5e-3] * 40), probe=faulty, after_run=faulty
    )
    return a, b, reference, exp
