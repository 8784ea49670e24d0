"""Every cache keyed on everything that defines what it caches (issue 52): a user
workload edited between two comparisons, in its file, in a local module it imports and
in an environment variable it reads, is never served from what the earlier version
cached (the frozen workload, the fp64 reference, the probes).

Target: the PrivateUse1 device ``parityfake``, where the planted noise fires (the
baseline and the fp64 reference, on the CPU, stay clean). Each step of the sequence
differs from the one before in one thing only, so a cache that ignored it would show
the earlier verdict: a fault named where it was fixed, or none where one was planted."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity import api
from parity.model.verdict import Verdict
from parity.request import CompareRequest
from tests.conftest import HAVE_FAKEDEVICE, needs_fakedevice

if HAVE_FAKEDEVICE:
    from parity.testing import fakedevice  # noqa: F401  (loaded before any backward pass)

pytestmark = [pytest.mark.slow, needs_fakedevice]

WORKLOAD = """
import os
from typing import Any

import torch
from torch import nn

from noise import SIGMA
from parity.workloads.mlp import MlpTrain

PLANTED = {planted}


class Planted(MlpTrain):
    name = "planted"

    def build_model(self) -> nn.Module:
        model = super().build_model()

        def hook(mod: nn.Module, args: Any, out: torch.Tensor) -> torch.Tensor:
            gain = float(os.environ.get("I52_GAIN", "1"))
            if not PLANTED or out.device.type != "parityfake" or SIGMA * gain == 0:
                return out
            noise = torch.randn(out.shape, generator=torch.Generator().manual_seed(0))
            rms = out.detach().float().pow(2).mean().sqrt()
            return out + (SIGMA * gain * rms * noise).to(out.device, out.dtype)

        model.get_submodule("body.2").register_forward_hook(hook)
        return model
"""


def _compare(tmp: Path, name: str, *, planted: bool, sigma: float, gain: str) -> Verdict:
    (tmp / "work" / "planted.py").write_text(WORKLOAD.format(planted=planted))
    (tmp / "work" / "noise.py").write_text(f"SIGMA = {sigma}\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARITY_PLUGINS", "parity.testing.fakedevice")
        mp.setenv("PARITY_CACHE_DIR", str(tmp / "cache"))  # shared by the four runs only
        mp.setenv("I52_GAIN", gain)
        request = CompareRequest.from_kwargs(
            workload=f"{tmp / 'work' / 'planted.py'}:Planted",
            baseline="cpu",
            target="parityfake",
            steps=3,
            batch_size=16,
            repeats=1,
            compliance=False,
            report=False,
            out=str(tmp / name),
        )
        return api.compare(request).verdict


def _diverging(v: Verdict) -> str | None:
    assert v.numerics is not None and v.numerics.layers is not None
    return v.numerics.layers.first_divergence


def test_no_cached_result_of_an_earlier_version_of_a_workload_is_used(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    clean = _compare(tmp_path, "clean", planted=False, sigma=0.1, gain="1")
    assert clean.passed and _diverging(clean) is None
    # the file edited: the fault planted; the clean run's probes are not this code's
    planted = _compare(tmp_path, "planted", planted=True, sigma=0.1, gain="1")
    assert not planted.passed and _diverging(planted) == "body.2"
    # the local module it imports edited: the fault fixed; no layer of the faulty run
    fixed = _compare(tmp_path, "fixed", planted=True, sigma=0.0, gain="1")
    assert fixed.passed and _diverging(fixed) is None, fixed.gates
    # the same code as the faulty run, the variable its step reads set to 0: fixed too
    off = _compare(tmp_path, "off", planted=True, sigma=0.1, gain="0")
    assert off.passed and _diverging(off) is None, off.gates
    fingerprints = {v.workload.fingerprint for v in (clean, planted, fixed, off)}
    assert len(fingerprints) == 4
