"""Integrity by content, through the API: an edited bundle is refused by ``diff`` (one
line naming the file) and run again by ``resume``; an edited or linked frozen-workload
cache, or a link in the cached fp64 reference, is noticed and rebuilt; a link in a bundle
is refused."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from parity import api
from parity.api import ComparisonResult
from parity.bundle import load_bundle
from parity.cache import cache_root, run_key
from parity.errors import BundleError
from parity.request import CompareRequest


def _compare(out: Path) -> ComparisonResult:
    options = dict(
        workload="mlp-train",
        target="cpu+bf16",
        steps=4,
        batch_size=4,  # a workload of its own in the session's cache
        repeats=1,
        compliance=False,
        report=False,  # these tests read the verdict and bundles: no plots drawn
        out=str(out),
    )
    return api.compare(CompareRequest.from_kwargs(**options))


def _times_ten(path: Path) -> None:
    metrics = json.loads(path.read_text())
    metrics["step_samples_s"] = [10 * s for s in metrics["step_samples_s"]]
    path.write_text(json.dumps(metrics))


@pytest.mark.slow
def test_edited_bundles_are_refused_by_diff_and_run_again_by_resume(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "c"
    _compare(out)
    metrics = out / "baseline" / "r00" / "metrics.json"
    _times_ten(metrics)
    with pytest.raises(BundleError) as refused:
        api.diff(out / "baseline", out / "target")
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{metrics} differs from what parity wrote")
    edited = metrics.read_text()
    with caplog.at_level(logging.WARNING, logger="parity"):
        resumed = api.resume(out)
    assert any("running it again" in r.getMessage() for r in caplog.records)
    assert metrics.read_text() != edited and load_bundle(metrics.parent).ok
    assert resumed.verdict.passed
    api.diff(out / "baseline", out / "target")  # whole again
    (out / "target" / "r00" / "extra.json").symlink_to("/etc/hostname")
    with pytest.raises(BundleError, match=r"'extra\.json', which is a link"):
        api.diff(out / "baseline", out / "target")


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_an_edited_workload_cache_and_a_linked_reference_are_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a cache of its own: the run's is shared with tests running at the same time
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    first = _compare(tmp_path / "first")
    fingerprint = first.baseline.first.fingerprint
    (frozen,) = [
        p
        for p in (cache_root() / "frozen").iterdir()
        if p.name.startswith("mlp-train-")
        and json.loads((p / "workload.json").read_text())["fingerprint"] == fingerprint
    ]
    _flip_a_byte(frozen / "data.safetensors")
    (reference,) = [
        p for p in cache_root().glob("reference-v*/*") if p.name == run_key(fingerprint)
    ]
    (reference / "capture.safetensors").unlink()
    (reference / "capture.safetensors").symlink_to(frozen / "weights.safetensors")
    with caplog.at_level(logging.WARNING, logger="parity"):
        again = _compare(tmp_path / "again")
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert f"{frozen / 'data.safetensors'} differs from what parity froze" in warned
    assert "rebuilt it" in warned and "cached fp64 reference is unusable" in warned
    assert again.baseline.first.fingerprint == fingerprint and again.verdict.passed
    assert not (reference / "capture.safetensors").is_symlink()
    assert not any(p.is_symlink() for p in (tmp_path / "again" / "reference").iterdir())
