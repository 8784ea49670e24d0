"""Run bundles: a directory per side and run, the unit of truth.

::

    manifest.json         what ran, where, the settings resolved, how it ended
    metrics.json          phases, raw step samples, summaries, memory, throughput
    numerics.json         loss curve and output summaries (tensors: numerics.safetensors)
    capture.json          the numerics probe (tensors: capture.safetensors)
    ops.json              the op census of a scan
    prepared.json         a ``freeze`` job's workload (frozen directory, fingerprint)
    job.json, events.jsonl, stdout.log, stderr.log

A bundle is written into a temporary sibling directory and renamed into place when it is
complete (``finalize``), so a bundle under its final name is never half-written. Before
the rename, the worker's logs are redacted (``parity.redact``) and ``digest.json`` is
written last: the sha256 of every other file. Loading verifies it first and names the
first file that differs, so a bundle edited after it was written (step times multiplied,
a tensor swapped) is refused, not judged. Loading reads JSON and safetensors only: no
file in a bundle is ever unpickled, a bundle holding any other kind of file (or a link)
is refused, and every JSON document is decoded strictly into its typed model: a wrong or
unknown key is a one-line ``BundleError`` naming the file and the key path.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from parity.errors import BundleError, OutputError
from parity.model import SCHEMA_VERSION
from parity.model.codec import DecodeError, Json, decode, encode, loads
from parity.model.job import Mode
from parity.model.manifest import LogCut, Logs, Manifest
from parity.model.metrics import Metrics
from parity.model.numerics import Capture, RunOutputs
from parity.model.ops import OpsCensus
from parity.model.side import MeasureRecord
from parity.spec import SideSpec

if TYPE_CHECKING:
    import torch

    from parity.redact import Redactor

T = TypeVar("T")
ALLOWED_SUFFIXES = (".json", ".jsonl", ".log", ".safetensors")
MANIFEST = "manifest.json"
METRICS = "metrics.json"
OUTPUTS = "numerics.json"
OUTPUT_TENSORS = "numerics.safetensors"
CAPTURE = "capture.json"
CAPTURE_TENSORS = "capture.safetensors"
OPS = "ops.json"
SIDE_FILE = "side.json"
PREPARED = "prepared.json"
#: the prefix of a margins tensor in ``numerics.safetensors`` (see ``RunOutputs.margins``)
MARGIN = "margin."
DIGEST = "digest.json"
#: which logs were cut to the size a bundle keeps, and by how much (``model.manifest.Logs``)
LOGS_FILE = "logs.json"
LOGS = (".log", ".jsonl")
#: what ``write_json`` writes before its rename, and the redactor before its own
TEMP_SUFFIX = ".tmp"
#: what a failed bundle does not keep: figures of a run that did not finish
PARTIAL = (METRICS, OUTPUTS, OUTPUT_TENSORS)
COMPLIANCE_RUNS = ("reseeded", "same-input")
#: the documents an ``ok`` bundle of each mode must hold besides its manifest
REQUIRED: Mapping[Mode, tuple[str, ...]] = {
    "measure": (METRICS, OUTPUTS),
    "train_ckpt": (METRICS, OUTPUTS),
    "soak": (METRICS, OUTPUTS),
    "script": (METRICS, OUTPUTS),
    # a reference written before whole-run references holds the probe only
    "reference": (CAPTURE,),
    "expected": (CAPTURE, OUTPUTS),
    "scan": (OPS,),
    "freeze": (PREPARED,),
}


def write_json(path: Path, data: Json) -> None:
    """Write JSON through a temporary file and an atomic rename; an ``OSError`` (the disk
    is full) is an ``OutputError`` naming the file, and leaves no temporary file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}{TEMP_SUFFIX}")
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OutputError(f"could not write {path}: {io_reason(exc)}") from exc


def io_reason(exc: OSError) -> str:
    """An I/O error in words, with the fix: ``no space left on device (ENOSPC): ...``."""
    code = errno.errorcode.get(exc.errno or 0)
    what = (exc.strerror or str(exc)).lower() + (f" ({code})" if code else "")
    return f"{what}: free space (or fix the file system) and run again with --resume"


def write_doc(path: Path, doc: object) -> None:
    """Write a typed document (a model dataclass) as JSON, atomically."""
    write_json(path, encode(doc))


def temp_dir_for(final: Path) -> Path:
    """A fresh temporary directory next to where a bundle will live."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    return tmp


@dataclass(frozen=True, kw_only=True, slots=True)
class Digest:
    """``digest.json``: the sha256 of every other file of a bundle, written last."""

    algorithm: str = "sha256"
    files: dict[str, str]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(directory: Path, redactor: Redactor | None = None) -> None:
    """Remove what a writer left half-done (hidden temporary files), redact the logs (with
    ``redactor``, else the process's), then write ``digest.json`` over every other file."""
    from parity.redact import redactor as default

    r = redactor or default()

    for stray in directory.glob(".*"):
        if stray.is_file() or stray.is_symlink():
            stray.unlink()
    cut = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name.endswith(LOGS):
            written, dropped = r.file(path)
            if dropped:
                cut.append(LogCut(name=path.name, written=written, dropped=dropped))
    if cut:  # said in the bundle, so the verdict and the views can say it
        write_doc(directory / LOGS_FILE, Logs(cut=tuple(cut)))
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name != DIGEST)
    write_doc(directory / DIGEST, Digest(files={p.name: sha256_file(p) for p in files}))


def finalize(tmp: Path, final: Path, *, redactor: Redactor | None = None) -> Path:
    """Seal a finished temporary bundle and rename it into place (atomic on one
    filesystem): a bundle under its final name is complete and verifiable."""
    seal(tmp, redactor)
    os.replace(tmp, final)
    return final


def verify(path: Path) -> None:
    """The bundle's files are exactly those its digest lists, byte for byte."""
    if not (path / DIGEST).is_file():
        raise BundleError(
            f"{path} has no {DIGEST}: it was not finished by parity (or was edited); rerun "
            "that side"
        )
    digest = read_doc(path / DIGEST, Digest)
    present = {p.name for p in path.iterdir() if p.name != DIGEST}
    for name in sorted(present | set(digest.files)):
        if name not in digest.files:
            raise BundleError(f"{path / name} was added after the bundle was written: remove it")
        if name not in present:
            raise BundleError(f"{path / name} is missing from the bundle: rerun that side")
        if sha256_file(path / name) != digest.files[name]:
            raise BundleError(
                f"{path / name} differs from what parity wrote (its sha256 does not match "
                f"{DIGEST}): the bundle was edited; rerun that side"
            )


def read_doc(path: Path, tp: type[T]) -> T:
    """A JSON document decoded into its type; BundleError names the file and key path."""
    try:
        raw = loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BundleError(
            f"{path} is not valid JSON ({exc}): the bundle is corrupt or truncated; rerun that side"
        ) from None
    try:
        return decode(tp, raw)
    except DecodeError as exc:
        raise BundleError(
            f"{path}: {exc.path} {exc.message}: the file does not fit its schema "
            "(corrupt or edited); rerun that side"
        ) from None


def _optional(path: Path, tp: type[T]) -> T | None:
    return read_doc(path, tp) if path.is_file() else None


@dataclass(frozen=True)
class Bundle:
    """A loaded bundle: its typed documents, with tensors loaded on demand."""

    path: Path
    manifest: Manifest
    metrics: Metrics | None = None
    outputs: RunOutputs | None = None
    ops: OpsCensus | None = None
    capture: Capture | None = None
    logs: Logs | None = None

    @property
    def status(self) -> str:
        return self.manifest.status

    @property
    def ok(self) -> bool:
        return self.manifest.ok

    @property
    def fingerprint(self) -> str:
        return self.manifest.workload.fingerprint

    @property
    def side(self) -> SideSpec:
        """The side this bundle ran (``str()`` writes it as given, e.g. ``cpu+bf16``)."""
        return self.manifest.side

    @property
    def losses(self) -> tuple[float | None, ...]:
        return self.outputs.losses if self.outputs is not None else ()

    def output_tensors(self) -> dict[str, torch.Tensor]:
        """The output tensors (safetensors only), empty if the run produced none."""
        return {k: v for k, v in self._tensors(OUTPUT_TENSORS).items() if not k.startswith(MARGIN)}

    def margin_tensors(self) -> dict[str, torch.Tensor]:
        """Generated tokens' top-2 logits margins, by the tokens' output name."""
        tensors = self._tensors(OUTPUT_TENSORS)
        return {k.removeprefix(MARGIN): v for k, v in tensors.items() if k.startswith(MARGIN)}

    def capture_tensors(self) -> dict[str, torch.Tensor]:
        """The numerics probe's samples (outputs, gradients, per-module values)."""
        return self._tensors(CAPTURE_TENSORS)

    def _tensors(self, name: str) -> dict[str, torch.Tensor]:
        path = self.path / name
        if not path.is_file():
            return {}
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except (SafetensorError, OSError, ValueError) as exc:
            raise BundleError(
                f"{path} is not a valid safetensors file ({exc}): the bundle is corrupt; "
                "rerun that side"
            ) from exc


def linked(item: Path) -> bool:
    """A symbolic link, or a file with another name elsewhere (a hard link: ``st_nlink``
    above 1, e.g. to a file of the host's, which a copy of the bundle would carry)."""
    return item.is_symlink() or (item.is_file() and item.lstat().st_nlink > 1)


def _check_entries(path: Path) -> None:
    for item in path.iterdir():
        if linked(item) or not item.is_file() or not item.name.endswith(ALLOWED_SUFFIXES):
            what = "a link" if linked(item) else "not JSON, a log or safetensors"
            raise BundleError(
                f"bundle {path} holds {item.name!r}, which is {what}: parity never loads "
                "other files (pickles included) and follows no links; remove it or rerun"
            )


def _check_version(path: Path) -> None:
    """Refuse another schema version in one line before decoding anything else."""
    try:
        raw: Any = loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BundleError(
            f"{path} is not valid JSON ({exc}): the bundle is corrupt or truncated; rerun that side"
        ) from None
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise BundleError(f"{path} has no integer schema_version: the bundle is corrupt")
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"{path.parent} has schema version {version}, newer than this parity reads "
            f"({SCHEMA_VERSION}): upgrade parity"
        )
    if version < SCHEMA_VERSION:
        raise BundleError(
            f"{path.parent} has schema version {version}, written by an older parity before "
            f"its typed contracts (this one reads {SCHEMA_VERSION}): rerun that side"
        )


def load_bundle(path: Path | str) -> Bundle:
    """Load and check a bundle; BundleError (exit 2) names the problem and the fix."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        raise BundleError(
            f"bundle {path} does not exist or is not a directory: pass a directory that parity "
            "run --out or parity compare wrote (OUT/baseline, OUT/target)"
        )
    _check_entries(path)
    if not (path / MANIFEST).is_file():
        raise BundleError(
            f"{path} is not a parity bundle: it has no {MANIFEST}; pass a directory written "
            "by parity run or parity compare"
        )
    _check_version(path / MANIFEST)
    verify(path)
    manifest = read_doc(path / MANIFEST, Manifest)
    parts = manifest.workload.parts
    if parts.digest() != manifest.workload.fingerprint:
        raise BundleError(
            f"{path / MANIFEST} has a fingerprint that does not match its parts: the bundle "
            "was edited after it was written; rerun that side"
        )
    if manifest.ok:
        for name in REQUIRED[manifest.mode]:
            if not (path / name).is_file():
                raise BundleError(
                    f"{path} is an ok {manifest.mode} bundle without {name}: the bundle is "
                    "incomplete; rerun that side"
                )
    return Bundle(
        path=path,
        manifest=manifest,
        metrics=_optional(path / METRICS, Metrics),
        outputs=_optional(path / OUTPUTS, RunOutputs),
        ops=_optional(path / OPS, OpsCensus),
        capture=_optional(path / CAPTURE, Capture),
        logs=_optional(path / LOGS_FILE, Logs),
    )


@dataclass(frozen=True)
class SideRuns:
    """One side of a comparison: its repeats (fresh processes) and compliance runs.

    On disk, a directory with one bundle per repeat (``r00``, ``r01``, ...), the
    compliance bundles (``reseeded``, ``same-input``) where they were run, and
    ``side.json`` with how measuring ended. A single bundle directory is a side with one
    repeat, so ``parity diff`` takes bundles from ``parity run`` as well.
    """

    path: Path
    repeats: tuple[Bundle, ...]
    compliance: dict[str, Bundle] = field(default_factory=dict)
    info: MeasureRecord | None = None

    @property
    def ok(self) -> tuple[Bundle, ...]:
        return tuple(b for b in self.repeats if b.ok)

    @property
    def first(self) -> Bundle:
        return (self.ok or self.repeats)[0]

    @classmethod
    def of(cls, bundle: Bundle) -> SideRuns:
        return cls(path=bundle.path, repeats=(bundle,))


def repeat_name(index: int) -> str:
    return f"r{index:02d}"


def load_side(path: Path | str) -> SideRuns:
    """Load a side directory or a single bundle; BundleError names what is wrong."""
    path = Path(path)
    if (path / MANIFEST).is_file():
        return SideRuns.of(load_bundle(path))
    if path.is_symlink() or not path.is_dir():
        raise BundleError(
            f"bundle {path} does not exist or is not a directory: pass a directory that parity "
            "run --out or parity compare wrote (OUT/baseline, OUT/target)"
        )
    repeats = sorted(
        p for p in path.iterdir() if p.is_dir() and p.name[:1] == "r" and p.name[1:].isdigit()
    )
    if not repeats:
        raise BundleError(
            f"{path} is neither a parity bundle nor a side directory (no manifest.json, no "
            "r00/): pass a directory written by parity run or parity compare"
        )
    for item in path.iterdir():
        if item.is_symlink() or (item.is_file() and item.name != SIDE_FILE):
            raise BundleError(
                f"side directory {path} holds {item.name!r}, which parity did not write: remove it"
            )
    compliance = {
        name: load_bundle(path / name) for name in COMPLIANCE_RUNS if (path / name).is_dir()
    }
    return SideRuns(
        path=path,
        repeats=tuple(load_bundle(p) for p in repeats),
        compliance=compliance,
        info=_optional(path / SIDE_FILE, MeasureRecord),
    )
