from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from parity.bundle import SCHEMA_VERSION, finalize, load_bundle, temp_dir_for, write_json
from parity.errors import BundleError


def _manifest(status: str = "ok", **extra: object) -> dict[str, object]:
    return {
        "schema_version": SCHEMA_VERSION,
        "status": status,
        "side": {"spec": "cpu"},
        "workload": {"fingerprint": "f" * 64},
        **extra,
    }


def make_bundle(path: Path, status: str = "ok") -> Path:
    path.mkdir(parents=True)
    write_json(path / "manifest.json", _manifest(status))
    if status == "ok":
        write_json(path / "metrics.json", {"summary": None})
        write_json(path / "numerics.json", {"losses": [1.0]})
        save_file({"y": torch.ones(2)}, str(path / "numerics.safetensors"))
    return path


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


def test_bundle_appears_only_when_finalized(tmp_path: Path) -> None:
    final = tmp_path / "side"
    tmp = temp_dir_for(final)
    write_json(tmp / "manifest.json", _manifest())
    assert not final.exists()
    finalize(tmp, final)
    assert (final / "manifest.json").is_file() and not tmp.exists()


def test_load_roundtrip(tmp_path: Path) -> None:
    b = load_bundle(make_bundle(tmp_path / "b"))
    assert b.ok and b.side == "cpu" and b.fingerprint == "f" * 64
    assert torch.equal(b.outputs()["y"], torch.ones(2))


def test_failed_bundle_needs_no_metrics(tmp_path: Path) -> None:
    b = load_bundle(make_bundle(tmp_path / "b", status="failed"))
    assert not b.ok and b.metrics == {}


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: (p / "manifest.json").unlink(), "has no manifest.json"),
        (lambda p: (p / "manifest.json").write_text('{"schema_ver'), "not valid JSON"),
        (lambda p: (p / "manifest.json").write_text("[1, 2]"), "must hold a JSON object"),
        (
            lambda p: write_json(p / "manifest.json", _manifest(schema_version=SCHEMA_VERSION + 1)),
            "newer than this parity reads",
        ),
        (
            lambda p: write_json(p / "manifest.json", _manifest(status="weird")),
            "has status 'weird'",
        ),
        (
            lambda p: (p / "model.pkl").write_bytes(b"\x80\x04K\x01."),
            "not JSON, a log or safetensors",
        ),
        (lambda p: (p / "metrics.json").unlink(), "has no metrics.json"),
        (lambda p: (p / "numerics.safetensors").write_bytes(b"garbage"), "not a valid safetensors"),
    ],
)
def test_damaged_bundles_are_refused_with_a_fix(
    tmp_path: Path, damage: object, message: str
) -> None:
    path = make_bundle(tmp_path / "b")
    damage(path)  # type: ignore[operator]
    with pytest.raises(BundleError, match=message) as info:
        load_bundle(path).outputs()
    assert "\n" not in str(info.value)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="does not exist"):
        load_bundle(tmp_path / "nope")
