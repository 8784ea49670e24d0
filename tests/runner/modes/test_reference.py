"""``reference`` mode: the fp64 CPU reference holds the numerics probe and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.model.job import ReferencePlan
from tests.fixtures.jobs import run, workload_job

pytestmark = pytest.mark.slow


def test_the_reference_is_the_probe_in_float64(tmp_path: Path) -> None:
    bundle = run(workload_job("gpt-train", plan=ReferencePlan(), role="reference"), tmp_path)
    assert bundle.ok, bundle.manifest.reason
    assert bundle.manifest.mode == "reference"
    # the whole run in fp64: every step's loss and the outputs after it, with its cost
    assert bundle.metrics is not None and bundle.ops is None
    assert bundle.outputs is not None and len(bundle.losses) > 1
    capture = bundle.capture
    assert capture is not None and capture.available and not capture.layers_eager
    assert capture.outputs["loss"].dtype == "float64"
    assert all(layer.output.dtype == "float64" for layer in capture.layers)
    assert capture.gradients and set(bundle.capture_tensors()) >= {"output.loss"}
