"""The checkpoint format: JSON plus safetensors, never a pickle, verified on load."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from parity.devices import get_device
from parity.runner.checkpoint import (
    CheckpointError,
    _decode,
    _encode,
    load_checkpoint,
    read_meta,
    save_checkpoint,
)


def test_state_encoding_round_trips_without_pickle() -> None:
    state = {
        "state": {0: {"step": torch.tensor(3.0), "buf": torch.ones(2, 2)}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": math.inf, "params": [0]}],
    }
    tensors: dict[str, torch.Tensor] = {}
    encoded = _encode(state, "optimizer", tensors)
    text = json.dumps(encoded, allow_nan=False)  # plain JSON
    back = _decode(json.loads(text), tensors)
    assert back["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["param_groups"][0]["eps"] == math.inf
    assert torch.equal(back["state"][0]["buf"], torch.ones(2, 2))
    with pytest.raises(CheckpointError, match="without pickle"):
        _encode({"f": object()}, "x", {})


def _trained(steps: int, seed: int = 0) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for i in range(steps):
        _step(model, opt, i)
    return model, opt


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer, i: int) -> None:
    g = torch.Generator().manual_seed(100 + i)
    opt.zero_grad()
    model(torch.randn(16, 4, generator=g)).pow(2).mean().backward()  # type: ignore[no-untyped-call]
    opt.step()


def test_checkpoint_resumes_bit_for_bit(tmp_path: Path) -> None:
    model, opt = _trained(3)
    cpu = get_device("cpu")
    path = save_checkpoint(
        tmp_path / "ck", model, opt, step=3, losses=[1.0, None, 0.5], fingerprint="f",
        side="cpu", device=cpu,
    )  # fmt: skip
    assert sorted(p.name for p in path.iterdir()) == [
        "checkpoint.json",
        "model.safetensors",
        "optimizer.safetensors",
    ]
    fresh, fresh_opt = _trained(0, seed=7)
    ck = load_checkpoint(path, fresh, fresh_opt, fingerprint="f", device=cpu)
    assert (ck.step, ck.losses) == (3, [1.0, None, 0.5])
    for i in (3, 4):
        _step(model, opt, i)
        _step(fresh, fresh_opt, i)
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(CheckpointError, match="another workload"):
        load_checkpoint(path, fresh, fresh_opt, fingerprint="g", device=cpu)
    with pytest.raises(CheckpointError, match="already exists"):
        save_checkpoint(path, model, opt, step=5, losses=[], fingerprint="f", side="cpu",
                        device=cpu)  # fmt: skip
    data = bytearray((path / "optimizer.safetensors").read_bytes())
    data[-1] ^= 1
    (path / "optimizer.safetensors").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256"):
        load_checkpoint(path, fresh, fresh_opt, fingerprint="f", device=cpu)


def test_the_meta_file_is_typed_and_strict(tmp_path: Path) -> None:
    model, opt = _trained(1)
    path = save_checkpoint(
        tmp_path / "ck", model, opt, step=1, losses=[1.0], fingerprint="f", side="cpu",
        device=get_device("cpu"),
    )  # fmt: skip
    meta = read_meta(path)
    assert meta.step == 1 and meta.optimizer_class == "AdamW"
    assert meta.rng.device_type is None  # the CPU's generator is saved as the host's
    raw = json.loads((path / "checkpoint.json").read_text())
    raw["unknown"] = 1
    (path / "checkpoint.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match=r"\$\.unknown"):
        read_meta(path)
