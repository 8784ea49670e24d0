"""From what a mode measured to typed documents: step phases and summaries, outputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from parity import stats
from parity.bundle import OUTPUT_TENSORS, OUTPUTS, read_doc
from parity.model.codec import decode, dumps, encode, loads
from parity.model.manifest import Items
from parity.model.metrics import Memory, MemoryPhase, Metrics, Summary
from parity.model.numerics import CheckpointEvents, RunOutputs
from parity.runner.documents import Steps, write_outputs
from parity.runner.session import SideSession
from parity.workloads.base import RunNumerics
from tests.fixtures.jobs import workload_job

MS = 1_000_000


def _samples(warmup: int = 6, steady: int = 40, seed: int = 0) -> list[int]:
    """A first step of 500 ms, a warm-up falling from 30 ms, then 10 ms steps with noise."""
    rng = np.random.default_rng(seed)
    warm = [int((30 - 3 * i) * MS) for i in range(warmup)]
    rest = [int(10 * MS * float(np.exp(rng.normal(0, 0.01)))) for _ in range(steady)]
    return [500 * MS, *warm, *rest]


def test_steps_split_the_first_step_warmup_and_steady_state() -> None:
    steps = Steps.of(_samples())
    assert steps.seconds[0] == pytest.approx(0.5)
    assert 1 <= steps.warmup <= 8 and steps.steady_from == 1 + steps.warmup
    assert steps.summary is not None and steps.median == pytest.approx(0.010, rel=0.02)
    assert steps.summary.noise == "ok" and steps.warnings == ()
    phases = steps.phases(startup=(2.0, 1.5), load_s=0.25)
    assert phases.first_step_s == pytest.approx(0.5) and phases.load_s == 0.25
    assert phases.warmup_steps + phases.steady_steps == len(steps.seconds) - 1
    assert phases.steady_s == pytest.approx(sum(steps.seconds[steps.steady_from :]))
    metrics = steps.metrics(
        phases=phases, memory=Memory(steps=MemoryPhase()), items=Items(samples=8, tokens=512)
    )
    assert metrics.throughput.samples_per_s == pytest.approx(8 / steps.median)
    assert metrics.steady_samples == steps.seconds[steps.steady_from :]
    assert decode(Metrics, loads(dumps(metrics))) == metrics


def test_one_step_has_no_summary_and_no_throughput() -> None:
    steps = Steps.of([5 * MS])
    assert steps.summary is None and steps.steady is None and steps.median is None
    assert steps.throughput(Items(samples=8, tokens=0)).samples_per_s is None


def test_the_statistics_summary_keeps_its_noise_judgement_in_json() -> None:
    noisy = stats.summarize([1.0, 1.0, 2.0, 2.0, 3.0, 1.0])
    data = encode(noisy)
    assert isinstance(data, dict) and data["noise"] == "gross" and data["n"] == 6
    assert decode(Summary, data) == noisy  # the judgement is derived again on reading
    unbounded = stats.summarize([0.0, 0.0, 0.0, 1.0, 1.0])
    assert math.isfinite(unbounded.iqr_rel) and unbounded.noise == "gross"  # JSON holds it


def test_outputs_hold_finite_losses_and_the_tensors(tmp_path: Path) -> None:
    session = SideSession(workload_job(), tmp_path, started_ns=0)
    numerics = RunNumerics(
        losses=[1.0, math.nan, 0.5, math.inf],
        outputs={"logits": torch.ones(2, 3), "bad": torch.tensor([1.0, math.nan])},
    )
    write_outputs(session, numerics, checkpoint=CheckpointEvents(start=0))
    doc = read_doc(tmp_path / OUTPUTS, RunOutputs)
    assert doc.losses == (1.0, None, 0.5, None)
    assert doc.outputs["logits"].shape == (2, 3) and doc.outputs["logits"].mean == pytest.approx(
        1.0
    )
    assert not doc.outputs["bad"].finite and doc.outputs["bad"].mean is None
    assert doc.checkpoint == CheckpointEvents(start=0)
    assert (tmp_path / OUTPUT_TENSORS).is_file()
