"""Freezing a workload: weights and data as safetensors, and the fingerprint.

Weights are initialised on the CPU from the seed and data is made on the CPU; both are
written once as safetensors and every side loads exactly these bytes. The fingerprint is
a sha256 over its parts (architecture config, weights, data, batch size, sequence length,
steps, seed, quality checks), each part hashed on its own so that a mismatch can be
named. Tensors are hashed by name, dtype, shape and raw little-endian bytes, so the
fingerprint is the same in any process and on any machine that makes the same bytes.
Files a workload reads (a checkpoint's weights, a ``--data`` file: ``Workload.sources``)
enter the weights or data part by their own digest too, so a changed byte changes the
fingerprint even where the frozen sample happens not to include it.

Frozen workloads are cached under ``PARITY_CACHE_DIR`` (default ``~/.cache/parity``),
keyed by the spec, the workload's class and source file, and the torch and parity versions. The
cache is checked by content on every use: ``workload.json`` records the sha256 of each
file frozen beside it, and ``read_frozen`` refuses a directory whose files differ, that
holds anything else, or holds a link or a non-regular file. ``freeze`` (in the worker
that prepares a workload for the parent) rebuilds such an entry with a warning; a worker
that loads one refuses it, with the fix in one line.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from parity.bundle import linked, sha256_file
from parity.cache import cache_root
from parity.errors import WorkloadError
from parity.model.codec import decode, encode, loads
from parity.model.spec import WorkloadSpec
from parity.model.workload import (
    FingerprintParts,
    Sources,
    WorkloadDescription,
    canonical,
    sha256_json,
)
from parity.plugins import is_file_workload
from parity.version import __version__
from parity.workloads.base import Workload, seeded
from parity.workloads.repository import repository

#: the layout of a frozen workload's directory (enters the cache key)
FORMAT = "parity-frozen/3"
META_FILE = "workload.json"
WEIGHTS_FILE = "weights.safetensors"
DATA_FILE = "data.safetensors"
__all__ = ["Frozen", "cache_root", "canonical", "freeze", "read_frozen"]


def hash_tensors(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous().reshape(-1)
        h.update(canonical([name, str(t.dtype), list(tensors[name].shape)]))
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _with_source(tensors: str, source: str | None) -> str:
    return tensors if source is None else sha256_json([tensors, source])


def fingerprint_parts(workload: Workload, weights: str, data: str) -> FingerprintParts:
    return parts_of(workload.describe(), weights, data)


def parts_of(d: WorkloadDescription, weights: str, data: str) -> FingerprintParts:
    """The fingerprint's parts of a workload described by ``d`` whose frozen weights and
    data hash to ``weights`` and ``data`` (``hash_tensors``)."""
    sources = d.sources or Sources()
    return FingerprintParts(
        config=sha256_json({"name": d.name, "kind": d.kind, "config": d.config}),
        weights=_with_source(weights, sources.weights),
        data=_with_source(data, sources.data),
        batch_size=d.batch_size,
        seq_len=d.seq_len,
        steps=d.steps,
        seed=d.seed,
        quality=sha256_json(encode(d.quality)),
        code=d.code.digest if d.code is not None else None,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class FrozenMeta:
    """``workload.json``: what the frozen weights and data are of."""

    fingerprint: str
    parts: FingerprintParts
    description: WorkloadDescription
    #: the sha256 of every other file of the directory, as frozen
    files: dict[str, str]


@dataclass(frozen=True)
class Frozen:
    """A frozen workload on disk."""

    path: Path
    fingerprint: str
    parts: FingerprintParts
    description: WorkloadDescription

    @property
    def weights_file(self) -> Path:
        return self.path / WEIGHTS_FILE

    @property
    def data_file(self) -> Path:
        return self.path / DATA_FILE

    def load(self) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        return load_file(str(self.weights_file)), load_file(str(self.data_file))


def cache_key(workload: Workload) -> str:
    source = inspect.getsourcefile(type(workload)) or ""
    code = Path(source).read_bytes() if source and Path(source).is_file() else b""
    # the class too (its file's bytes are below): two workloads of one file may share a
    # name and a config, and build different models
    kind = type(workload).__qualname__
    return hashlib.sha256(
        canonical([encode(workload.describe()), torch.__version__, __version__, FORMAT, kind])
        + hashlib.sha256(code).digest()
    ).hexdigest()[:24]


def materialize(workload: Workload) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Build the seeded weights and data on the CPU."""
    with seeded(workload.seed):
        model = workload.initial_model()
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


def freeze(
    workload: Workload, root: Path | None = None, *, warn: Callable[[str], None] | None = None
) -> Frozen:
    """Freeze a workload into the cache (or reuse the cached copy, verified) and return
    it; a cached copy that fails verification is rebuilt, and ``warn`` told why. A
    workload from a user's file also gets its repository's git state (not cached, not
    fingerprinted: it is the state now)."""
    frozen = _freeze(workload, root, warn)
    spec = getattr(workload, "spec", None)
    if isinstance(spec, WorkloadSpec) and is_file_workload(spec.name):
        repo = repository(spec.name.rpartition(":")[0])
        return replace(frozen, description=replace(frozen.description, repository=repo))
    return frozen


def _freeze(workload: Workload, root: Path | None, warn: Callable[[str], None] | None) -> Frozen:
    root = root or cache_root() / "frozen"
    final = root / f"{workload.name.replace('/', '_').replace(':', '_')}-{cache_key(workload)}"
    if final.exists() or final.is_symlink():
        problem = _problem(final)
        if problem is None:
            frozen = read_frozen(final)
            if encode(frozen.description) == encode(workload.describe()):
                return frozen
            problem = f"frozen workload {final} describes another workload than its name"
        _discard(final, problem)
        if warn is not None:
            warn(f"{problem}: rebuilt it")
    weights, data = materialize(workload)
    parts = fingerprint_parts(workload, hash_tensors(weights), hash_tensors(data))
    tmp = root / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    try:
        save_file(weights, str(tmp / WEIGHTS_FILE))
        save_file(data, str(tmp / DATA_FILE))
        meta = FrozenMeta(
            fingerprint=parts.digest(),
            parts=parts,
            description=workload.describe(),
            files={name: sha256_file(tmp / name) for name in (WEIGHTS_FILE, DATA_FILE)},
        )
        (tmp / META_FILE).write_text(json.dumps(encode(meta), indent=2))
        try:
            os.replace(tmp, final)
        except OSError:  # another process froze the same workload first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return read_frozen(final)


def _discard(path: Path, problem: str) -> None:
    """Remove a cache entry that failed verification (a link: the link, not its target)."""
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)
    except OSError as exc:
        raise WorkloadError(
            f"{problem}, and it cannot be removed ({exc.strerror}): delete {path} and run again"
        ) from None


def _meta(path: Path) -> FrozenMeta | str:
    """``workload.json`` decoded strictly, or what is wrong with it."""
    file = path / META_FILE
    try:
        meta = decode(FrozenMeta, loads(file.read_text()))
    except (OSError, ValueError) as exc:  # a DecodeError names the key path
        return f"frozen workload {file} is unreadable ({exc})"
    if meta.parts.digest() != meta.fingerprint:
        return f"frozen workload {file} has a fingerprint that does not match its parts"
    return meta


def _problem(path: Path) -> str | None:
    """What is wrong with a frozen workload's directory, or None: a link or anything but
    a directory, a file other than those frozen, a link or non-regular file inside, or a
    file whose sha256 is not the one recorded when it was frozen."""
    if path.is_symlink() or not path.is_dir():
        return f"frozen workload {path} is a link or not a directory"
    meta = _meta(path)
    if isinstance(meta, str):
        return meta
    expected = {META_FILE, *meta.files}
    for item in sorted(path.iterdir()):
        if item.name not in expected:
            return f"frozen workload {path} holds {item.name!r}, which parity did not freeze"
        if linked(item) or not item.is_file():
            return f"frozen workload {path} holds {item.name!r}, a link or not a regular file"
    for name, digest in sorted(meta.files.items()):
        if not (path / name).is_file():
            return f"frozen workload {path} is missing {name}"
        if sha256_file(path / name) != digest:
            return (
                f"frozen workload {path / name} differs from what parity froze (its sha256 "
                f"is not the one in {META_FILE})"
            )
    return _content_problem(path, meta)


def _content_problem(path: Path, meta: FrozenMeta) -> str | None:
    """The fingerprint recomputed from the tensors themselves: a digest in ``META_FILE``
    rewritten to fit edited weights or data does not make them the workload frozen under
    that fingerprint (the cache is content-addressed, not trusted)."""
    try:
        weights, data = load_file(str(path / WEIGHTS_FILE)), load_file(str(path / DATA_FILE))
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        return f"frozen workload {path} holds weights or data that do not load ({exc})"
    parts = parts_of(meta.description, hash_tensors(weights), hash_tensors(data))
    if parts != meta.parts or parts.digest() != meta.fingerprint:
        return (
            f"frozen workload {path} holds weights or data whose fingerprint is not the one "
            f"in {META_FILE} (edited after it was frozen)"
        )
    return None


def read_frozen(path: Path) -> Frozen:
    """A frozen workload's directory, verified by content (see the module's docstring);
    a WorkloadError names what differs and the fix."""
    problem = _problem(path)
    if problem is not None:
        raise WorkloadError(f"{problem}: delete {path} and run again (parity rebuilds it)")
    meta = _meta(path)
    assert not isinstance(meta, str)
    return Frozen(
        path=path, fingerprint=meta.fingerprint, parts=meta.parts, description=meta.description
    )
