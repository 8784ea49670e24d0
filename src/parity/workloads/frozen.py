"""Freezing a workload: weights and data as safetensors, and the fingerprint.

Weights are initialised on the CPU from the seed and data is made on the CPU; both are
written once as safetensors and every side loads exactly these bytes. The fingerprint is
a sha256 over its parts (architecture config, weights, data, batch size, sequence length,
steps, seed, quality checks), each part hashed on its own so that a mismatch can be
named. Tensors are hashed by name, dtype, shape and raw little-endian bytes, so the
fingerprint is the same in any process and on any machine that makes the same bytes.

Frozen workloads are cached under ``PARITY_CACHE_DIR`` (default ``~/.cache/parity``),
keyed by the spec, the workload's source file, and the torch and parity versions.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from parity import __version__
from parity.workloads.base import Workload, seeded

FINGERPRINT_PARTS = (
    "config",
    "weights",
    "data",
    "batch_size",
    "seq_len",
    "steps",
    "seed",
    "quality",
)


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def hash_tensors(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous().reshape(-1)
        h.update(canonical([name, str(t.dtype), list(tensors[name].shape)]))
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def fingerprint_parts(workload: Workload, weights: str, data: str) -> dict[str, Any]:
    d = workload.describe()
    return {
        "config": hashlib.sha256(
            canonical({"name": d["name"], "kind": d["kind"], "config": d["config"]})
        ).hexdigest(),
        "weights": weights,
        "data": data,
        "batch_size": d["batch_size"],
        "seq_len": d["seq_len"],
        "steps": d["steps"],
        "seed": d["seed"],
        "quality": hashlib.sha256(canonical(d["quality"])).hexdigest(),
    }


def fingerprint(parts: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({k: parts[k] for k in FINGERPRINT_PARTS})).hexdigest()


@dataclass(frozen=True)
class Frozen:
    """A frozen workload on disk."""

    path: Path
    fingerprint: str
    parts: dict[str, Any]
    description: dict[str, Any]

    @property
    def weights_file(self) -> Path:
        return self.path / "weights.safetensors"

    @property
    def data_file(self) -> Path:
        return self.path / "data.safetensors"

    def load(self) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        return load_file(str(self.weights_file)), load_file(str(self.data_file))

    def to_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "parts": self.parts,
            "description": self.description,
        }


def cache_root() -> Path:
    root = os.environ.get("PARITY_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "parity"


def cache_key(workload: Workload) -> str:
    source = inspect.getsourcefile(type(workload)) or ""
    code = Path(source).read_bytes() if source and Path(source).is_file() else b""
    return hashlib.sha256(
        canonical([workload.describe(), torch.__version__, __version__])
        + hashlib.sha256(code).digest()
    ).hexdigest()[:24]


def materialize(workload: Workload) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Build the seeded weights and data on the CPU."""
    with seeded(workload.seed):
        model = workload.build_model()
    weights: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for k, v in model.state_dict().items():
        # tied parameters (an LM head sharing the embedding) share storage, which
        # safetensors refuses: each name gets its own copy (loading copies into the one
        # tied parameter, so the model stays tied)
        t = v.detach().contiguous()
        ptr = t.untyped_storage().data_ptr()
        weights[k] = t.clone() if ptr in seen and t.numel() else t
        seen.add(ptr)
    with seeded(workload.seed + 1):
        data = {k: v.contiguous() for k, v in workload.make_data().items()}
    return weights, data


def freeze(workload: Workload, root: Path | None = None) -> Frozen:
    """Freeze a workload into the cache (or reuse the cached copy) and return it."""
    root = root or cache_root() / "frozen"
    final = root / f"{workload.name.replace('/', '_').replace(':', '_')}-{cache_key(workload)}"
    if (final / "workload.json").is_file():
        return read_frozen(final)
    weights, data = materialize(workload)
    parts = fingerprint_parts(workload, hash_tensors(weights), hash_tensors(data))
    tmp = root / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    try:
        save_file(weights, str(tmp / "weights.safetensors"))
        save_file(data, str(tmp / "data.safetensors"))
        meta = {
            "fingerprint": fingerprint(parts),
            "parts": parts,
            "description": workload.describe(),
        }
        (tmp / "workload.json").write_text(json.dumps(meta, indent=2))
        try:
            os.replace(tmp, final)
        except OSError:  # another process froze the same workload first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return read_frozen(final)


def read_frozen(path: Path) -> Frozen:
    meta = json.loads((path / "workload.json").read_text())
    return Frozen(
        path=path,
        fingerprint=meta["fingerprint"],
        parts=meta["parts"],
        description=meta["description"],
    )
