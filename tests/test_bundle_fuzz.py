"""Fuzzing the bundle reader: whatever is on disk, loading a bundle either works or
raises BundleError (exit 2 with one line); it never crashes and never unpickles."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parity.bundle import load_bundle, load_side
from parity.errors import BundleError

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
manifests = st.fixed_dictionaries(
    {},
    optional={
        "schema_version": st.integers(-2, 3) | st.text(max_size=3),
        "status": st.sampled_from(["ok", "failed", "incomplete", "bogus"]) | json_values,
        "side": st.fixed_dictionaries({"spec": st.text(max_size=12)}) | json_values,
        "workload": st.fixed_dictionaries(
            {"fingerprint": st.text(max_size=8)}, optional={"parts": json_values}
        )
        | json_values,
    },
)
documents = st.one_of(
    manifests.map(json.dumps),
    json_values.map(json.dumps),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
)


def write(root: Path, files: dict[str, Any]) -> Path:
    bundle = root / "b"
    bundle.mkdir()
    for name, content in files.items():
        if isinstance(content, bytes):
            (bundle / name).write_bytes(content)
        else:
            (bundle / name).write_text(content)
    return bundle


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    manifest=documents,
    metrics=st.none() | documents,
    numerics=st.none() | documents,
    tensors=st.none() | st.binary(max_size=200),
)
def test_the_reader_accepts_or_refuses_cleanly(
    manifest: str, metrics: str | None, numerics: str | None, tensors: bytes | None
) -> None:
    files: dict[str, Any] = {"manifest.json": manifest}
    if metrics is not None:
        files["metrics.json"] = metrics
    if numerics is not None:
        files["numerics.json"] = numerics
    if tensors is not None:
        # a safetensors header is a little-endian length then JSON: give it a plausible start
        files["numerics.safetensors"] = len(tensors).to_bytes(8, "little") + tensors
    root = Path(tempfile.mkdtemp())
    try:
        bundle = write(root, files)
        try:
            loaded = load_bundle(bundle)
            loaded.outputs()
            load_side(bundle)
        except BundleError as exc:
            assert "\n" not in str(exc)
    finally:
        shutil.rmtree(root)
