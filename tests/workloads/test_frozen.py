from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from parity.errors import WorkloadError
from parity.model.spec import WorkloadSpec
from parity.workloads import resolve
from parity.workloads.frozen import freeze, hash_tensors, read_frozen

SCRIPT = """
import json, sys
from pathlib import Path
from parity.model.spec import WorkloadSpec
from parity.workloads import resolve
from parity.workloads.frozen import freeze
from parity.model.codec import encode
spec = WorkloadSpec(name=sys.argv[1], seed=int(sys.argv[2]))
f = freeze(resolve(spec), Path(sys.argv[3]))
print(json.dumps({"fingerprint": f.fingerprint, "parts": encode(f.parts)}))
"""


def _fingerprint_in_fresh_process(name: str, seed: int, root: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, name, str(seed), str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mlp-train", "gpt-train", "gpt-generate", "cnn-infer"])
def test_fingerprint_is_stable_across_processes(name: str, tmp_path: Path) -> None:
    # two processes, two caches: the bytes are made twice and must hash the same
    a = _fingerprint_in_fresh_process(name, 0, tmp_path / "a")
    b = _fingerprint_in_fresh_process(name, 0, tmp_path / "b")
    assert a == b
    here = freeze(resolve(WorkloadSpec(name=name)), tmp_path / "c")
    assert here.fingerprint == a["fingerprint"]


@pytest.mark.parametrize(
    ("change", "parts"),
    [
        ({"seed": 1}, {"weights", "data", "seed"}),
        ({"batch_size": 4}, {"data", "batch_size"}),
        ({"steps": 7}, {"steps"}),
        ({"seq_len": 32}, {"weights", "data", "seq_len"}),
        ({"size": "small"}, {"config", "weights", "data", "steps", "seq_len"}),
        ({"overrides": (("n_layers", "1"),)}, {"config", "weights"}),
    ],
)
def test_any_change_changes_the_fingerprint(
    change: dict[str, object], parts: set[str], tmp_path: Path
) -> None:
    base = freeze(resolve(WorkloadSpec(name="gpt-train")), tmp_path)
    other = freeze(resolve(WorkloadSpec(name="gpt-train", **change)), tmp_path)  # type: ignore[arg-type]
    assert other.fingerprint != base.fingerprint
    assert parts <= set(base.parts.differing(other.parts))


def test_frozen_files_are_what_both_sides_load(tmp_path: Path) -> None:
    frozen = freeze(resolve(WorkloadSpec(name="mlp-train")), tmp_path)
    weights, data = frozen.load()
    assert hash_tensors(weights) == frozen.parts.weights
    assert hash_tensors(data) == frozen.parts.data
    assert frozen.parts.digest() == frozen.fingerprint
    assert frozen.description == resolve(WorkloadSpec(name="mlp-train")).describe()
    again = freeze(resolve(WorkloadSpec(name="mlp-train")), tmp_path)
    assert again.path == frozen.path  # cached, not rebuilt
    assert read_frozen(frozen.path).fingerprint == frozen.fingerprint
    assert not list(tmp_path.glob(".tmp-*"))


def test_hash_covers_dtype_and_shape() -> None:
    x = torch.zeros(4)
    assert hash_tensors({"x": x}) != hash_tensors({"x": x.view(2, 2)})
    assert hash_tensors({"x": x}) != hash_tensors({"x": x.double()[:2]})
    assert hash_tensors({"x": x}) != hash_tensors({"y": x})


def test_an_edited_frozen_workload_is_refused(tmp_path: Path) -> None:
    frozen = freeze(resolve(WorkloadSpec(name="mlp-train")), tmp_path)
    meta = json.loads((frozen.path / "workload.json").read_text())
    meta["parts"]["steps"] = 1
    (frozen.path / "workload.json").write_text(json.dumps(meta))
    with pytest.raises(WorkloadError, match="does not match its parts"):
        read_frozen(frozen.path)
    meta["parts"]["extra"] = 1
    (frozen.path / "workload.json").write_text(json.dumps(meta))
    with pytest.raises(WorkloadError, match=r"\$\.parts\.extra"):
        read_frozen(frozen.path)


def _fresh(tmp_path: Path) -> tuple[Path, str]:
    frozen = freeze(resolve(WorkloadSpec(name="mlp-train", steps=2)), tmp_path)
    return frozen.path, frozen.fingerprint


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["weights.safetensors", "data.safetensors"])
def test_an_edited_cache_file_is_refused_on_read_and_rebuilt_by_freeze(
    tmp_path: Path, name: str
) -> None:
    path, fingerprint = _fresh(tmp_path)
    clean = (path / name).read_bytes()
    _flip_a_byte(path / name)
    with pytest.raises(WorkloadError) as refused:
        read_frozen(path)
    message = str(refused.value)
    assert "\n" not in message and str(path / name) in message and "sha256" in message
    assert message.endswith(f"delete {path} and run again (parity rebuilds it)")
    warnings: list[str] = []
    again = freeze(resolve(WorkloadSpec(name="mlp-train", steps=2)), tmp_path, warn=warnings.append)
    assert again.path == path and again.fingerprint == fingerprint
    assert (path / name).read_bytes() == clean
    assert len(warnings) == 1 and warnings[0].endswith(": rebuilt it") and name in warnings[0]


def _plant_link(path: Path, target: Path) -> None:
    (path / "weights.safetensors").unlink()
    (path / "weights.safetensors").symlink_to(target)


@pytest.mark.parametrize("how", ["link inside", "link instead", "extra file", "fifo"])
def test_links_and_strangers_in_the_cache_are_refused_and_rebuilt(tmp_path: Path, how: str) -> None:
    path, fingerprint = _fresh(tmp_path / "cache")
    elsewhere = _fresh(tmp_path / "other")[0]
    if how == "link inside":  # the same bytes, through a link: still refused
        _plant_link(path, elsewhere / "weights.safetensors")
    elif how == "link instead":
        shutil.rmtree(path)
        path.symlink_to(elsewhere, target_is_directory=True)
    elif how == "extra file":
        (path / "notes.pkl").write_bytes(b"\x80\x04")
    else:
        os.mkfifo(path / "data.safetensors.fifo")
    with pytest.raises(WorkloadError, match=r"link|parity did not freeze|not a directory"):
        read_frozen(path)
    warnings: list[str] = []
    again = freeze(
        resolve(WorkloadSpec(name="mlp-train", steps=2)), tmp_path / "cache", warn=warnings.append
    )
    assert again.fingerprint == fingerprint and len(warnings) == 1
    assert not path.is_symlink() and sorted(p.name for p in path.iterdir()) == [
        "data.safetensors",
        "weights.safetensors",
        "workload.json",
    ]
    assert (elsewhere / "weights.safetensors").is_file()  # a link's target is never touched


def test_a_cache_entry_that_cannot_be_removed_is_one_line_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _fresh(tmp_path)
    _flip_a_byte(path / "data.safetensors")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(shutil, "rmtree", refuse)
    with pytest.raises(WorkloadError) as refused:
        freeze(resolve(WorkloadSpec(name="mlp-train", steps=2)), tmp_path)
    assert "cannot be removed (Permission denied)" in str(refused.value)
    assert str(refused.value).endswith(f"delete {path} and run again")
