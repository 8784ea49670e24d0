"""Training checkpoints without pickle, and the worker's ``train_ckpt`` mode.

A checkpoint is a directory written to a temporary sibling and renamed into place, so it
is complete or absent, never half-written::

    model.safetensors       the model's state dict (tied tensors stored once per name)
    optimizer.safetensors   every tensor of the optimizer's state dict, by path
                            (``state.<param index>.exp_avg``, ...)
    checkpoint.json         format, step, the loss curve so far, the optimizer state dict
                            with each tensor replaced by ``{"__tensor__": path}``, the RNG
                            state keys, who saved it, and the sha256 of both files

Nothing is ever unpickled: ``torch.save``/``torch.load`` are not used. Loading verifies
the format, the workload fingerprint and both files' sha256 before it touches the model.

The ``train_ckpt`` mode (``parity check rollback`` and ``recovery``) runs the workload's
training steps ``start .. stop-1`` (settings ``stop_at``; ``resume_from`` a checkpoint
directory sets ``start``), saves a checkpoint after step ``save_at`` into
``checkpoint_dir`` and reports it as a ``checkpoint`` event (with the worker's pid, for a
parent that kills it), and with ``await_kill_s`` waits to be killed after its last step
instead of finishing. The runner must expose ``model`` and ``optimizer`` (``TrainRunner``
does) and may expose ``losses``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from parity.bundle import MANIFEST, write_json
from parity.devices.base import Device
from parity.probes import memory
from parity.probes.timing import StepTimer
from parity.runner.job import Job
from parity.workloads.base import RunNumerics, StepRunner, Workload

FORMAT = "parity-checkpoint/1"
MODEL_FILE = "model.safetensors"
OPTIMIZER_FILE = "optimizer.safetensors"
META_FILE = "checkpoint.json"
_MARKERS = ("__tensor__", "__dict__", "__tuple__", "__float__")
IMPLEMENTATION_FLAGS = ("foreach", "fused", "capturable", "differentiable")

Emit = Callable[..., None]


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be written or read back safely."""


@dataclass(kw_only=True)
class ModeRun:
    """What ``run_side`` hands a check mode once the model, data and runner are ready."""

    job: Job
    out: Path
    manifest: dict[str, Any]
    workload: Workload
    runner: StepRunner
    device: Device
    mode: contextlib.AbstractContextManager[Any]
    emit: Emit
    set_phase: Callable[[str], None]
    startup: dict[str, float | None] = field(default_factory=dict)
    load_ns: int = 0


def run_check_mode(run: ModeRun) -> None:
    """Dispatch the worker modes of ``parity check``."""
    if run.job.settings.get("mode") == "soak":
        from parity.runner.soak import run_soak

        run_soak(run)
    else:
        run_train_ckpt(run)


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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def unwrap(model: nn.Module) -> nn.Module:
    """The module behind ``torch.compile`` (its state dict keys carry no prefix)."""
    inner = getattr(model, "_orig_mod", model)
    return inner if isinstance(inner, nn.Module) else model


def model_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict on the CPU, each name its own storage (safetensors refuses sharing)."""
    return {k: v.detach().to("cpu").contiguous().clone() for k, v in model.state_dict().items()}


def _rng_state(device: torch.device) -> tuple[dict[str, torch.Tensor], str | None]:
    tensors = {"cpu": torch.random.get_rng_state()}
    if device.type != "cpu":
        with contextlib.suppress(Exception):  # a backend without RNG state access
            tensors[device.type] = torch.get_device_module(device.type).get_rng_state()
            return tensors, device.type
    return tensors, None


def save_checkpoint(
    final: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    step: int,
    losses: list[float | None],
    fingerprint: str,
    side: str,
    device: torch.device,
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
        rng, rng_device = _rng_state(device)
        for name, t in rng.items():
            opt_tensors[f"rng.{name}"] = t.contiguous()
        save_file(opt_tensors, str(tmp / OPTIMIZER_FILE))
        meta = {
            "format": FORMAT,
            "step": step,
            "losses": losses,
            "fingerprint": fingerprint,
            "side": side,
            "optimizer_class": type(optimizer).__name__,
            "optimizer": encoded,
            "rng": {"cpu": "rng.cpu", "device_type": rng_device},
            "sha256": {
                MODEL_FILE: _sha256(tmp / MODEL_FILE),
                OPTIMIZER_FILE: _sha256(tmp / OPTIMIZER_FILE),
            },
            "saved_unix": time.time(),
        }
        write_json(tmp / META_FILE, meta)
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


def read_meta(path: Path) -> dict[str, Any]:
    """``checkpoint.json`` after checking the format and both files' sha256."""
    try:
        meta = json.loads((path / META_FILE).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path} is not a readable parity checkpoint ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path / META_FILE} is not a {FORMAT} checkpoint")
    for name in (MODEL_FILE, OPTIMIZER_FILE):
        file = path / name
        if not file.is_file() or _sha256(file) != meta.get("sha256", {}).get(name):
            raise CheckpointError(f"{file} is missing or does not match its sha256: corrupt")
    return meta


def load_checkpoint(
    path: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    fingerprint: str,
    device: torch.device,
) -> Checkpoint:
    """Restore model, optimizer and RNG state from a checkpoint directory."""
    meta = read_meta(path)
    if meta.get("fingerprint") != fingerprint:
        raise CheckpointError(
            f"checkpoint {path} was saved by another workload (fingerprint "
            f"{str(meta.get('fingerprint'))[:12]}): resume the workload that saved it"
        )
    if meta.get("optimizer_class") != type(optimizer).__name__:
        raise CheckpointError(
            f"checkpoint {path} holds {meta.get('optimizer_class')} state, the runner uses "
            f"{type(optimizer).__name__}"
        )
    unwrap(model).load_state_dict(load_file(str(path / MODEL_FILE)), strict=True)
    tensors = load_file(str(path / OPTIMIZER_FILE))
    state = _decode(meta["optimizer"], tensors)
    # hyperparameters come from the checkpoint; how this side implements the update
    # (fused, foreach, capturable kernels) stays this side's
    for saved, current in zip(state.get("param_groups", []), optimizer.param_groups, strict=False):
        saved.update({k: current[k] for k in IMPLEMENTATION_FLAGS if k in current})
    optimizer.load_state_dict(state)
    torch.random.set_rng_state(tensors["rng.cpu"])
    rng_device = (meta.get("rng") or {}).get("device_type")
    if rng_device is not None and rng_device == device.type:
        torch.get_device_module(device.type).set_rng_state(tensors[f"rng.{rng_device}"])
    return Checkpoint(
        path=path, step=int(meta["step"]), losses=list(meta["losses"]), side=str(meta["side"])
    )


# -- the worker mode -------------------------------------------------------------------------


def training_parts(runner: StepRunner) -> tuple[nn.Module, torch.optim.Optimizer]:
    model, optimizer = getattr(runner, "model", None), getattr(runner, "optimizer", None)
    if not isinstance(model, nn.Module) or not isinstance(optimizer, torch.optim.Optimizer):
        raise CheckpointError(
            f"{type(runner).__name__} exposes no model and optimizer to checkpoint: use "
            "parity.workloads.loops.TrainRunner or set runner.model and runner.optimizer"
        )
    return model, optimizer


def losses_so_far(runner: StepRunner) -> list[float | None]:
    values = getattr(runner, "losses", None) or []
    out: list[float | None] = []
    for v in values:
        x = float(v.float().item() if isinstance(v, torch.Tensor) else v)
        out.append(x if math.isfinite(x) else None)
    return out


def run_train_ckpt(run: ModeRun) -> None:
    from parity.runner.phases import build_metrics, write_numerics

    s, workload, device = run.job.settings, run.workload, run.device
    model, optimizer = training_parts(run.runner)
    start, before = 0, []
    restored: dict[str, Any] | None = None
    if s.get("resume_from"):
        run.set_phase("restore")
        run.emit("phase", phase="restore")
        ckpt = load_checkpoint(
            Path(s["resume_from"]),
            model,
            optimizer,
            fingerprint=run.job.fingerprint,
            device=device.torch_device,
        )
        start, before = ckpt.step, ckpt.losses
        restored = {"from": str(ckpt.path), "step": ckpt.step, "saved_by": ckpt.side}
    stop = int(s.get("stop_at") or workload.steps)
    save_at = s.get("save_at")
    if not start < stop <= workload.steps:
        raise CheckpointError(f"steps {start}..{stop} are outside the workload's {workload.steps}")
    saved: dict[str, Any] | None = None
    device.reset_peak_memory()
    memory.reset_host_peak()
    timer = StepTimer(run.runner.step, device.synchronize)
    samples: list[int] = []
    with run.mode:
        run.set_phase("steps")
        run.emit("phase", phase="steps", steps=stop)
        for i in range(start, stop):
            samples += timer.run(i, 1)
            run.emit("progress", done=i + 1, steps=stop)
            if save_at is not None and i + 1 == int(save_at):
                run.set_phase("checkpoint")
                path = save_checkpoint(
                    Path(s["checkpoint_dir"]),
                    model,
                    optimizer,
                    step=i + 1,
                    losses=before + losses_so_far(run.runner),
                    fingerprint=run.job.fingerprint,
                    side=run.job.side,
                    device=device.torch_device,
                )
                saved = {"to": str(path), "step": i + 1}
                run.emit("checkpoint", step=i + 1, path=str(path), pid=os.getpid())
                run.set_phase("steps")
        mem_steps = {"device": device.memory_peaks(), "host_peak_rss": memory.host_peak_rss()}
        if s.get("await_kill_s"):
            run.set_phase("awaiting kill")
            run.emit("phase", phase="awaiting kill")
            time.sleep(float(s["await_kill_s"]))
            raise CheckpointError(f"not killed within {s['await_kill_s']} s after its last step")
        run.set_phase("finish")
        numerics = run.runner.finish()
    metrics = build_metrics(samples, workload, run.startup, run.load_ns, {"steps": mem_steps})
    metrics["mode"] = "train_ckpt"
    write_json(run.out / "metrics.json", metrics)
    # the whole curve: the steps before the checkpoint as it recorded them, then this run's
    curve = [math.nan if x is None else x for x in before] + list(numerics.losses)
    extra = {**numerics.extra, "checkpoint": {"start": start, "restored": restored, "saved": saved}}
    write_numerics(run.out, RunNumerics(losses=curve, outputs=numerics.outputs, extra=extra))
    run.manifest.update(status="ok", reason=None, finished_unix=time.time())
    run.emit("phase", phase="done")
    write_json(run.out / MANIFEST, run.manifest)
