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
the rename, the worker's logs are redacted (``parity.safety.redact``) and ``digest.json`` is
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
import stat
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from parity.bundle.old_verdicts import current_verdict
from parity.errors import BundleError, OutputError, denied
from parity.model import SCHEMA_VERSION
from parity.model.bundle import MARGIN, Bundle, SideRuns
from parity.model.codec import DecodeError, Json, decode, encode, loads
from parity.model.job import JOB_FILE, Job, Mode, upgrade_job
from parity.model.manifest import LogCut, Logs, Manifest
from parity.model.metrics import Metrics
from parity.model.numerics import Capture, RunOutputs
from parity.model.ops import OpsCensus
from parity.model.side import MeasureRecord
from parity.model.verdict import JudgeInputs, Verdict
from parity.model.workload import PreparedWorkload

if TYPE_CHECKING:
    from parity.arrays import Array
    from parity.safety.redact import Redactor

__all__ = ["MARGIN", "Bundle", "SideRuns"]  # and the functions below
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
    "reference": (CAPTURE, METRICS, OUTPUTS),
    "expected": (CAPTURE, METRICS, OUTPUTS),
    "scan": (OPS,),
    "freeze": (PREPARED,),
}


def write_json(path: Path, data: Json) -> str:
    """Write JSON through a temporary file and an atomic rename; an ``OSError`` (the disk
    is full) is an ``OutputError`` naming the file, and leaves no temporary file. Returns
    the sha256 of what was written."""
    return write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def write_text(path: Path, text: str) -> str:
    """Write text (UTF-8) atomically, as ``write_json``; returns the sha256 of its bytes."""
    data = text.encode("utf-8")
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}{TEMP_SUFFIX}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException as exc:  # none left where it fails, however it fails
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(f"could not write {path}: {io_reason(exc)}") from exc
        raise
    return sha256_bytes(data)


def io_reason(exc: OSError) -> str:
    """An I/O error in words, with the fix: ``no space left on device (ENOSPC): ...``."""
    code = errno.errorcode.get(exc.errno or 0)
    what = (exc.strerror or str(exc)).lower() + (f" ({code})" if code else "")
    return f"{what}: free space (or fix the file system) and run again with --resume"


def write_doc(path: Path, doc: object) -> str:
    """Write a typed document (a model dataclass) as JSON, atomically; returns the sha256
    of what was written."""
    return write_json(path, encode(doc))


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
    """The sha256 of a file too large to hold (a checkpoint), read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(directory: Path, redactor: Redactor | None = None) -> dict[str, bytes]:
    """Remove what a writer left half-done (hidden temporary files), redact the logs (with
    ``redactor``, else the process's), then write ``digest.json`` over every other file;
    returns every file's bytes as hashed (digest.json's included)."""
    from parity.safety.redact import redactor as default

    r = redactor or default()

    for stray in directory.glob(".*"):
        if stray.is_file() or stray.is_symlink():
            stray.unlink()
    for item in directory.iterdir():  # what parity did not write (a workload's link, a
        # FIFO) is never read, digested or copied: it goes
        if linked(item) or not (item.is_file() or item.is_dir()):
            with contextlib.suppress(OSError):
                item.unlink()
    cut = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name.endswith(LOGS):
            written, dropped = r.file(path)
            if dropped:
                cut.append(LogCut(name=path.name, written=written, dropped=dropped))
    if cut:  # said in the bundle, so the verdict and the views can say it
        write_doc(directory / LOGS_FILE, Logs(cut=tuple(cut)))
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.suffix in (".json", ".jsonl") and path.name != DIGEST:
            _redact_document(path, r)
    paths = sorted(p for p in directory.iterdir() if p.is_file() and p.name != DIGEST)
    read = {p.name: read_hashed(p) for p in paths}
    digest = Digest(files={name: sha for name, (_, sha) in read.items()})
    write_doc(directory / DIGEST, digest)
    files = {name: data for name, (data, _) in read.items()}
    return {**files, DIGEST: (directory / DIGEST).read_bytes()}


def _redact_document(path: Path, r: Redactor) -> None:
    """A document the worker wrote, redacted again by this process: a workload runs in
    the worker and can switch that process's redactor off, or take its secrets out of the
    environment that redactor reads, before it raises or records one. What does not parse
    (a line a killed worker tore) is redacted as text."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = path.suffix == ".jsonl"
    pieces = text.splitlines(keepends=True) if lines else [text]
    out = []
    for piece in pieces:
        try:
            doc = json.loads(piece) if piece.strip() else None
        except ValueError:
            out.append(r.text(piece))
            continue
        redacted = r.document(doc)
        if redacted == doc:
            out.append(piece)
            continue
        end = "\n" if piece.endswith("\n") else ""
        out.append(json.dumps(redacted, indent=None if lines else 2) + end)
    if out != pieces:
        write_text(path, "".join(out))


def finalize(tmp: Path, final: Path, *, redactor: Redactor | None = None) -> Bundle:
    """Seal a finished temporary bundle and rename it into place (atomic on one
    filesystem): a bundle under its final name is complete and verifiable. Returns it
    decoded from the bytes the seal hashed (checked as a load checks it, not read again)."""
    files = seal(tmp, redactor)
    os.replace(tmp, final)
    _check_entries(final)
    _check_version(final / MANIFEST, files[MANIFEST])
    digest = _decode_doc(final / DIGEST, files[DIGEST], Digest)
    return _decode_bundle(final, files, digest)


def read_own(path: Path) -> bytes:
    """The bytes of a file parity wrote into a bundle or the cache: a regular file with
    one name, opened without following a link (checked on the open file, so a file
    swapped in after a check is caught); BundleError for a link, a hard link (a host's
    file carried in), a FIFO or a device, whatever a digest says."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BundleError(_not_own(path, "a symbolic link")) from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BundleError(_not_own(path, "not a regular file"))
        if st.st_nlink > 1:
            raise BundleError(_not_own(path, "a hard link (a file with another name)"))
        return f.read()


def _not_own(path: Path, what: str) -> str:
    return (
        f"{path} is {what}: parity reads only the files it wrote and digested, and follows "
        "no links; remove it (or the bundle) and run again"
    )


def read_hashed(path: Path) -> tuple[bytes, str]:
    """A bundle file's bytes and their sha256: the one place a bundle's files are read
    and hashed (sealing, loading), once each."""
    data = read_own(path)
    return data, sha256_bytes(data)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _verified(path: Path) -> tuple[dict[str, bytes], Digest]:
    """Every file of a bundle, read and hashed once, checked against ``digest.json``: the
    bytes its documents and tensors are then decoded from (no file is read twice). The
    manifest's schema version is checked first, before any other file."""
    read = {MANIFEST: read_hashed(path / MANIFEST)}
    _check_version(path / MANIFEST, read[MANIFEST][0])
    if not (path / DIGEST).is_file():
        raise BundleError(
            f"{path} has no {DIGEST}: it was not finished by parity (or was edited); rerun "
            "that side"
        )
    digest = read_doc(path / DIGEST, Digest)
    present = sorted(p.name for p in path.iterdir() if p.is_file() and p.name != DIGEST)
    files: dict[str, bytes] = {}
    for name in sorted(set(present) | set(digest.files)):
        if name not in digest.files:
            raise BundleError(f"{path / name} was added after the bundle was written: remove it")
        if name not in present:
            raise BundleError(f"{path / name} is missing from the bundle: rerun that side")
        files[name], sha = read[name] if name in read else read_hashed(path / name)
        if sha != digest.files[name]:
            raise BundleError(
                f"{path / name} differs from what parity wrote (its sha256 does not match "
                f"{DIGEST}): the bundle was edited; rerun that side"
            )
    return files, digest


def _json(path: Path, data: bytes) -> Json:
    try:
        return loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleError(
            f"{path} is not valid JSON ({exc}): the bundle is corrupt or truncated; rerun that side"
        ) from None


def _decode_doc(
    path: Path, data: bytes, tp: type[T], upgrade: Callable[[Json], Json] | None = None
) -> T:
    """A document's bytes decoded into its type (``upgrade``: an older shape of it made
    today's first); BundleError names the file and key path."""
    raw = _json(path, data)
    if upgrade is not None:
        raw = upgrade(raw)
    try:
        return decode(tp, raw)
    except DecodeError as exc:
        raise BundleError(
            f"{path}: {exc.path} {exc.message}: the file does not fit its schema "
            "(corrupt or edited); rerun that side"
        ) from None


def read_doc(path: Path, tp: type[T]) -> T:
    """A JSON document decoded into its type; BundleError names the file and key path."""
    try:
        data = path.read_bytes()
    except PermissionError as exc:
        raise denied(exc, path) from None
    except OSError as exc:
        raise BundleError(
            f"{path} is not valid JSON ({exc}): the bundle is corrupt or truncated; rerun that side"
        ) from None
    return _decode_doc(path, data, tp)


def _tensors(path: Path, data: bytes | None) -> dict[str, Array]:
    """A safetensors file's tensors as numpy arrays (``parity.arrays``: no torch)."""
    if data is None:
        return {}
    from parity.arrays import read

    try:
        return read(data)
    except (OSError, ValueError) as exc:
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


def _check_version(path: Path, data: bytes) -> None:
    """One schema policy: this version is read, any other refused in one line before
    anything else is decoded (older bundles are rerun, never migrated)."""
    raw = _json(path, data)
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


def _no_bundle(path: Path) -> BundleError:
    return BundleError(
        f"bundle {path} does not exist or is not a directory: pass a directory that parity "
        "run --out or parity compare wrote (OUT/baseline, OUT/target)"
    )


def load_bundle(path: Path | str) -> Bundle:
    """Load and check a bundle, each file read and hashed once; BundleError (exit 2)
    names the problem and the fix."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        raise _no_bundle(path)
    _check_entries(path)
    if not (path / MANIFEST).is_file():
        raise BundleError(
            f"{path} is not a parity bundle: it has no {MANIFEST}; pass a directory written "
            "by parity run or parity compare"
        )
    files, digest = _verified(path)
    return _decode_bundle(path, files, digest)


def _decode_bundle(path: Path, files: Mapping[str, bytes], digest: Digest) -> Bundle:
    """The typed bundle from its verified files' bytes."""

    def doc(name: str, tp: type[T], upgrade: Callable[[Json], Json] | None = None) -> T | None:
        return _decode_doc(path / name, files[name], tp, upgrade) if name in files else None

    manifest = _decode_doc(path / MANIFEST, files[MANIFEST], Manifest)
    if manifest.workload.parts.digest() != manifest.workload.fingerprint:
        raise BundleError(
            f"{path / MANIFEST} has a fingerprint that does not match its parts: the bundle "
            "was edited after it was written; rerun that side"
        )
    if manifest.ok:
        for name in REQUIRED[manifest.mode]:
            if name not in files:
                raise BundleError(
                    f"{path} is an ok {manifest.mode} bundle without {name}: the bundle is "
                    "incomplete; rerun that side"
                )
    return Bundle(
        path=path,
        manifest=manifest,
        metrics=doc(METRICS, Metrics),
        outputs=doc(OUTPUTS, RunOutputs),
        ops=doc(OPS, OpsCensus),
        capture=doc(CAPTURE, Capture),
        prepared=doc(PREPARED, PreparedWorkload),
        logs=doc(LOGS_FILE, Logs),
        job=doc(JOB_FILE, Job, upgrade_job),  # an older parity's too (--resume reads it)
        tensors=_tensors(path / OUTPUT_TENSORS, files.get(OUTPUT_TENSORS)),
        probe=_tensors(path / CAPTURE_TENSORS, files.get(CAPTURE_TENSORS)),
        digest=digest.files,
    )


def repeat_name(index: int) -> str:
    return f"r{index:02d}"


def is_bundle(path: Path) -> bool:
    """Whether ``path`` holds a bundle (a manifest), complete or not."""
    return (path / MANIFEST).is_file()


def load_side(path: Path | str) -> SideRuns:
    """Load a side directory or a single bundle; BundleError names what is wrong."""
    path = Path(path)
    if is_bundle(path):
        return SideRuns.of(load_bundle(path))
    if path.is_symlink() or not path.is_dir():
        raise _no_bundle(path)
    repeats = sorted(
        p for p in path.iterdir() if p.is_dir() and p.name[:1] == "r" and p.name[1:].isdigit()
    )
    if not repeats:
        raise BundleError(
            f"{path} is neither a parity bundle nor a side directory (no {MANIFEST}, no "
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
    info = path / SIDE_FILE
    return SideRuns(
        path=path,
        repeats=tuple(load_bundle(p) for p in repeats),
        compliance=compliance,
        info=read_doc(info, MeasureRecord) if info.is_file() else None,
    )


# -- a comparison's directory -----------------------------------------------------------
#
#   OUT/request.json      the request (parity.request)
#   OUT/inputs.json       what the judge was given besides the bundles
#   OUT/verdict.json      the verdict
#   OUT/report.html       the HTML report
#   OUT/baseline/ OUT/target/      each side's runs (r00, ..., reseeded, same-input)
#   OUT/reference/ OUT/expected/   the fp64 reference and the expected-error run
#   OUT/curve.json        (a throughput-latency curve: one comparison per OUT/bsN)

VERDICT = "verdict.json"
INPUTS = "inputs.json"
REQUEST = "request.json"
REPORT_HTML = "report.html"
CURVE = "curve.json"
REFERENCE_DIR = "reference"
EXPECTED_DIR = "expected"


def is_comparison(path: Path) -> bool:
    """Whether ``path`` holds a judged comparison (its verdict)."""
    return (path / VERDICT).is_file()


def read_verdict(out: Path) -> tuple[Verdict, str]:
    """``OUT/verdict.json`` decoded strictly, and the sha256 of its bytes (read once);
    BundleError names the file and the key path."""
    path = out / VERDICT
    try:
        data = path.read_bytes()
        raw = loads(data.decode("utf-8"))
    except PermissionError as exc:
        raise denied(exc, path) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"{path} is not valid JSON ({exc}): rerun the comparison") from None
    try:
        return decode(Verdict, current_verdict(path, raw)), sha256_bytes(data)
    except DecodeError as exc:
        raise BundleError(
            f"{path} is not a parity verdict this version reads ({exc.path} {exc.message}): "
            "rerun the comparison, or parity diff its bundles"
        ) from None


def written_unix(out: Path) -> float:
    """When a comparison's verdict was written (its file's modification time)."""
    return (out / VERDICT).stat().st_mtime


def forget_verdict(out: Path) -> None:
    """Remove a comparison's verdict and judge inputs (resuming it: they are made again)."""
    for name in (VERDICT, INPUTS):
        (out / name).unlink(missing_ok=True)


def read_inputs(out: Path) -> JudgeInputs | None:
    """The judge inputs a comparison stored (``OUT/inputs.json``), if it has them."""
    path = out / INPUTS
    return read_doc(path, JudgeInputs) if path.is_file() else None
