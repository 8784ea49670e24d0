"""Bundles: atomic writes, the digest verified, strict typed documents, one-line refusals."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from parity.bundle import (
    DIGEST,
    MANIFEST,
    METRICS,
    OUTPUT_TENSORS,
    finalize,
    load_bundle,
    seal,
    temp_dir_for,
    write_doc,
    write_json,
)
from parity.errors import BundleError
from parity.model.spec import parse_side
from tests.fixtures import bundles


def make_bundle(path: Path, status: str = "ok") -> Path:
    man = bundles.manifest(role="baseline", spec="cpu", status=status)  # type: ignore[arg-type]
    metrics = bundles.metrics([0.5, 0.1, 0.1, 0.1]) if status == "ok" else None
    return bundles.write_bundle(path, man, run_metrics=metrics, tensors={"y": torch.ones(2)})


def test_write_json_is_atomic_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_json(target, {"x": 1})
    write_json(target, {"x": 2})
    assert json.loads(target.read_text()) == {"x": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_write_json_refuses_nan_before_touching_the_file(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_json(target, {"x": 1})
    with pytest.raises(ValueError):
        write_json(target, {"x": float("nan")})
    assert json.loads(target.read_text()) == {"x": 1}


def test_a_bundle_appears_only_when_finalized_and_sealed(tmp_path: Path) -> None:
    final = tmp_path / "side"
    tmp = temp_dir_for(final)
    write_doc(tmp / MANIFEST, bundles.manifest(role="run", spec="cpu", status="failed"))
    (tmp / "stderr.log").write_text("token ghp_" + "a" * 36 + "\n")
    assert not final.exists()
    finalize(tmp, final)
    assert (final / DIGEST).is_file() and not tmp.exists()
    assert "ghp_" not in (final / "stderr.log").read_text()  # logs redacted before sealing
    assert load_bundle(final).status == "failed"


def test_load_round_trip(tmp_path: Path) -> None:
    b = load_bundle(make_bundle(tmp_path / "b"))
    assert b.ok and b.side == parse_side("cpu") and b.metrics is not None
    assert b.fingerprint == b.manifest.workload.parts.digest()
    y = b.output_tensors()["y"]  # read back as a numpy array, without torch
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    assert np.array_equal(y, np.ones(2))


def test_a_failed_bundle_needs_no_metrics(tmp_path: Path) -> None:
    b = load_bundle(make_bundle(tmp_path / "b", status="failed"))
    assert not b.ok and b.metrics is None and b.outputs is None


def _edit_json(name: str, change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        data = json.loads((path / name).read_text())
        change(data)
        (path / name).write_text(json.dumps(data))

    return edit


#: edits found by the digest (nothing else is read before it)
EDITED = [
    (_edit_json(METRICS, lambda d: d.update(step_samples_s=[10.0] * 4)), "metrics.json differs"),
    (lambda p: (p / "extra.json").write_text("{}"), "was added after the bundle"),
    (lambda p: (p / METRICS).unlink(), "metrics.json is missing"),
    (lambda p: (p / DIGEST).unlink(), "has no digest.json"),
    (lambda p: (p / OUTPUT_TENSORS).write_bytes(b"garbage"), "numerics.safetensors differs"),
    (lambda p: os.symlink("/etc/hostname", p / "stolen.log"), "which is a link"),
    (lambda p: (p / "model.pkl").write_bytes(b"\x80\x04K\x01."), "not JSON, a log or safetensors"),
    (lambda p: (p / MANIFEST).unlink(), "has no manifest.json"),
    (lambda p: (p / MANIFEST).write_text('{"schema_ver'), "not valid JSON"),
    (_edit_json(MANIFEST, lambda d: d.update(schema_version=1)), "schema version 1, written by"),
    (_edit_json(MANIFEST, lambda d: d.update(schema_version=99)), "newer than this parity"),
]
#: edits a consistent digest lets through to the strict decoder
DECODED = [
    (_edit_json(MANIFEST, lambda d: d.update(surprise=1)), "$.surprise is not a known key"),
    (_edit_json(MANIFEST, lambda d: d.update(status="weird")), "$.status expected one of"),
    (_edit_json(METRICS, lambda d: d.update(steady_from_step="1")), "expected a whole number"),
    (
        _edit_json(MANIFEST, lambda d: d["workload"].update(fingerprint="f" * 64)),  # type: ignore[attr-defined]
        "fingerprint that does not match its parts",
    ),
    (lambda p: (p / METRICS).write_text('{"units": NaN}'), "not valid JSON"),
    (lambda p: (p / METRICS).write_text('{"a": 1, "a": 2}'), "duplicate key"),
]


@pytest.mark.parametrize(("damage", "words"), EDITED + DECODED)
def test_damaged_bundles_are_refused_in_one_line(
    tmp_path: Path, damage: Callable[[Path], None], words: str
) -> None:
    path = make_bundle(tmp_path / "b")
    damage(path)
    if (damage, words) in DECODED:
        (path / DIGEST).unlink()
        seal(path)
    with pytest.raises(BundleError) as info:
        load_bundle(path).output_tensors()
    assert words in str(info.value) and "\n" not in str(info.value)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="does not exist"):
        load_bundle(tmp_path / "nope")


def test_a_reference_holding_the_probe_alone_is_refused_not_judged(tmp_path: Path) -> None:
    """One schema policy: an ok fp64 reference holds its whole run (metrics and outputs)
    beside the probe; one with the probe alone (as written before whole-run references)
    is refused when loaded, never judged as a reference without a run."""
    from tests.judge.numerics_cases import capture, reference_values

    man = bundles.manifest(role="reference", spec="cpu", mode="reference")
    probe = capture(reference_values(), None)
    for name in ("", METRICS, "numerics.json"):
        path = bundles.write_bundle(
            tmp_path / f"without-{name}", man, run_metrics=bundles.metrics([0.1] * 4), capture=probe
        )
        if not name:  # the whole run
            assert load_bundle(path).outputs is not None
            continue
        (path / DIGEST).unlink()
        (path / name).unlink()
        seal(path)
        with pytest.raises(BundleError, match=f"ok reference bundle without {name}"):
            load_bundle(path)
