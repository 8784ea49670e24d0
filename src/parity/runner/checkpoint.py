"""Training checkpoints without pickle: the file format, saving and loading.

A checkpoint is a directory written to a temporary sibling and renamed into place, so it
is complete or absent, never half-written::

    model.safetensors       the model's state dict (tied tensors stored once per name)
    optimizer.safetensors   every tensor of the optimizer's state dict, by path
                            (``state.<param index>.exp_avg``, ...)
    checkpoint.json         format, step, the loss curve so far, the optimizer state dict
                            with each tensor replaced by ``{"__tensor__": path}``, the RNG
                            state keys (the CPU's and the device's, as its adapter gives
                            them), who saved it, and the sha256 of both files

Nothing is ever unpickled: ``torch.save``/``torch.load`` are not used. Loading verifies
the format, the workload fingerprint and both files' sha256 before it touches the model.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from parity.bundle import sha256_file, write_doc
from parity.devices.base import Device
from parity.model.codec import Json, decode, loads

FORMAT: Final = "parity-checkpoint/1"
MODEL_FILE = "model.safetensors"
OPTIMIZER_FILE = "optimizer.safetensors"
META_FILE = "checkpoint.json"
_MARKERS = ("__tensor__", "__dict__", "__tuple__", "__float__")
IMPLEMENTATION_FLAGS = ("foreach", "fused", "capturable", "differentiable")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be written or read back safely."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RngKeys:
    """Where the generator states are in ``optimizer.safetensors``."""

    cpu: str
    #: the device type whose generator was saved too, as ``rng.device`` (None: only the
    #: CPU's)
    device_type: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckpointMeta:
    """``checkpoint.json``."""

    format: Literal["parity-checkpoint/1"]
    step: int
    losses: tuple[float | None, ...]
    fingerprint: str
    side: str
    optimizer_class: str
    #: the optimizer's state dict with tensors replaced by references (see ``_encode``)
    optimizer: Json
    rng: RngKeys
    sha256: dict[str, str]
    saved_unix: float


# -- encoding a state dict as JSON plus named tensors --------------------------------------


def _encode(value: Any, path: str, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        tensors[path] = value.detach().to("cpu").contiguous().clone()
        return {"__tensor__": path}
    if isinstance(value, dict):
        if all(isinstance(k, str) and k not in _MARKERS for k in value):
            return {k: _encode(v, f"{path}.{k}", tensors) for k, v in value.items()}
        for k in value:  # integer keys (optimizer state by parameter index) keep their type
            if not isinstance(k, str | int) or isinstance(k, bool):
                raise CheckpointError(f"cannot store the key {k!r} of {path} without pickle")
        return {"__dict__": [[k, _encode(v, f"{path}.{k}", tensors)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, f"{path}.{i}", tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{path}.{i}", tensors) for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise CheckpointError(
        f"cannot store {path} ({type(value).__name__}) without pickle: checkpoints hold "
        "tensors, numbers, strings, lists, tuples and dicts"
    )


def _decode(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tensor__" in value:
        name = value["__tensor__"]
        if name not in tensors:
            raise CheckpointError(f"the checkpoint names a tensor {name!r} it does not hold")
        return tensors[name]
    if "__dict__" in value:
        return {k: _decode(v, tensors) for k, v in value["__dict__"]}
    if "__tuple__" in value:
        return tuple(_decode(v, tensors) for v in value["__tuple__"])
    if "__float__" in value:
        return float(value["__float__"])
    return {k: _decode(v, tensors) for k, v in value.items()}


def unwrap(model: nn.Module) -> nn.Module:
    """The module behind ``torch.compile`` (its state dict keys carry no prefix)."""
    inner = getattr(model, "_orig_mod", model)
    return inner if isinstance(inner, nn.Module) else model


def model_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict on the CPU, each name its own storage (safetensors refuses sharing)."""
    return {k: v.detach().to("cpu").contiguous().clone() for k, v in model.state_dict().items()}


def save_checkpoint(
    final: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    step: int,
    losses: list[float | None],
    fingerprint: str,
    side: str,
    device: Device,
) -> Path:
    """Write a checkpoint directory atomically; returns ``final``."""
    if final.exists():
        raise CheckpointError(f"checkpoint {final} already exists: choose a new directory")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    try:
        save_file(model_tensors(unwrap(model)), str(tmp / MODEL_FILE))
        opt_tensors: dict[str, torch.Tensor] = {}
        encoded = _encode(optimizer.state_dict(), "optimizer", opt_tensors)
        opt_tensors["rng.cpu"] = torch.random.get_rng_state().contiguous()
        device_rng = device.rng_state()
        if device_rng is not None:
            opt_tensors["rng.device"] = device_rng.detach().cpu().contiguous()
        save_file(opt_tensors, str(tmp / OPTIMIZER_FILE))
        meta = CheckpointMeta(
            format=FORMAT,
            step=step,
            losses=tuple(losses),
            fingerprint=fingerprint,
            side=side,
            optimizer_class=type(optimizer).__name__,
            optimizer=encoded,
            rng=RngKeys(cpu="rng.cpu", device_type=device.type if device_rng is not None else None),
            sha256={
                MODEL_FILE: sha256_file(tmp / MODEL_FILE),
                OPTIMIZER_FILE: sha256_file(tmp / OPTIMIZER_FILE),
            },
            saved_unix=time.time(),
        )
        write_doc(tmp / META_FILE, meta)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int
    losses: list[float | None]
    side: str


def read_meta(path: Path) -> CheckpointMeta:
    """``checkpoint.json`` after checking the format and both files' sha256."""
    try:
        meta = decode(CheckpointMeta, loads((path / META_FILE).read_text()))
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # DecodeError names the key
        raise CheckpointError(f"{path} is not a readable {FORMAT} checkpoint ({exc})") from exc
    for name in (MODEL_FILE, OPTIMIZER_FILE):
        file = path / name
        if not file.is_file() or sha256_file(file) != meta.sha256.get(name):
            raise CheckpointError(f"{file} is missing or does not match its sha256: corrupt")
    return meta


def load_checkpoint(
    path: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    fingerprint: str,
    device: Device,
) -> Checkpoint:
    """Restore model, optimizer and RNG state from a checkpoint directory."""
    meta = read_meta(path)
    if meta.fingerprint != fingerprint:
        raise CheckpointError(
            f"checkpoint {path} was saved by another workload (fingerprint "
            f"{meta.fingerprint[:12]}): resume the workload that saved it"
        )
    if meta.optimizer_class != type(optimizer).__name__:
        raise CheckpointError(
            f"checkpoint {path} holds {meta.optimizer_class} state, the runner uses "
            f"{type(optimizer).__name__}"
        )
    unwrap(model).load_state_dict(load_file(str(path / MODEL_FILE)), strict=True)
    tensors = load_file(str(path / OPTIMIZER_FILE))
    state = _decode(meta.optimizer, tensors)
    # hyperparameters come from the checkpoint; how this side implements the update
    # (fused, foreach, capturable kernels) stays this side's
    for saved, current in zip(state.get("param_groups", []), optimizer.param_groups, strict=False):
        saved.update({k: current[k] for k in IMPLEMENTATION_FLAGS if k in current})
    optimizer.load_state_dict(state)
    torch.random.set_rng_state(tensors[meta.rng.cpu])
    # the device's generator only where the same kind of device saved it
    if meta.rng.device_type == device.type and "rng.device" in tensors:
        device.set_rng_state(tensors["rng.device"])
    return Checkpoint(path=path, step=meta.step, losses=list(meta.losses), side=meta.side)
