"""Typed bundles: strict documents, schema versions, links refused, the digest verified."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from parity.bundle import DIGEST, MANIFEST, METRICS, load_bundle
from parity.errors import BundleError
from tests.fixtures import bundles


def _bundle(path: Path) -> Path:
    man = bundles.manifest(role="baseline", spec="cpu")
    return bundles.write_bundle(path, man, run_metrics=bundles.metrics([0.5, 0.1, 0.1, 0.1]))


def test_a_sealed_bundle_loads(tmp_path: Path) -> None:
    b = load_bundle(_bundle(tmp_path / "b"))
    assert b.ok and b.metrics is not None and b.metrics.summary is not None
    assert (tmp_path / "b" / DIGEST).is_file()


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ("times", "metrics.json differs from what parity wrote"),
        ("added", "was added after the bundle was written"),
        ("removed", "is missing from the bundle"),
        ("no-digest", "has no digest.json"),
        ("link", "which is a link"),
        ("version", "schema version 1, written by an older parity"),
        ("newer", "newer than this parity reads"),
        ("key", "not a known key"),
    ],
)
def test_an_edited_bundle_is_refused_naming_the_file(tmp_path: Path, edit: str, words: str) -> None:
    path = _bundle(tmp_path / "b")
    metrics = path / METRICS
    if edit == "times":
        data = json.loads(metrics.read_text())
        data["step_samples_s"] = [x * 10 for x in data["step_samples_s"]]
        metrics.write_text(json.dumps(data))
    elif edit == "added":
        (path / "extra.json").write_text("{}")
    elif edit == "removed":
        metrics.unlink()
    elif edit == "no-digest":
        (path / DIGEST).unlink()
    elif edit == "link":
        os.symlink("/etc/hostname", path / "stolen.log")
    elif edit in ("version", "newer", "key"):
        data = json.loads((path / MANIFEST).read_text())
        if edit == "key":
            data["surprise"] = 1
        else:
            data["schema_version"] = 1 if edit == "version" else 99
        (path / MANIFEST).write_text(json.dumps(data))
        if edit == "key":  # a consistent digest, so that the decoder is what refuses
            from parity.bundle import seal

            (path / DIGEST).unlink()
            seal(path)
    with pytest.raises(BundleError) as info:
        load_bundle(path)
    assert words in str(info.value) and "\n" not in str(info.value)
