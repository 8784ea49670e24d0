"""Content-addressed cache of a side's first-repeat probes: the numerics probe
(``capture.json`` and ``capture.safetensors``), the op scan (``ops.json``) and the count
of a step's FLOPs (``flops.json``, kept here only: the bundle has it in ``metrics.json``).

All three are functions of the frozen workload, the side and the software and machine the side
runs on: the same fingerprint on the same side with the same environment gives the same
capture and census. A second comparison of a workload (another target against the same
baseline, or the same pair again) would pay for them again: on a 135M-parameter model the
op scan alone took twice its side's steady steps. The worker that made them stores them
under ``PARITY_CACHE_DIR/probes-vN/<fingerprint>-<side>/<probe>-<key>``, where the key is a
sha256 over the fingerprint, the side spec and the worker's whole environment record
(parity, Python, torch and backend versions, the device and its flags, the installed
packages' digest, the allow-listed environment variables, e.g. a fake device's failing
ops); a later first repeat with the same key copies them into its bundle instead of
running them. ``probes.json`` records each file's sha256; an entry whose files differ,
that holds a link, or that cannot be read is removed and the probe runs again. Stored
with a hidden temporary directory renamed into place, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from parity.bundle import CAPTURE, CAPTURE_TENSORS, OPS, read_own, sha256_bytes, sha256_file
from parity.cache import cache_root
from parity.errors import BundleError
from parity.model import SCHEMA_VERSION
from parity.model.codec import encode
from parity.model.job import Job
from parity.model.manifest import Environment
from parity.model.workload import sha256_json

#: each cached probe's files, by the worker's phase name
PROBE_FILES: dict[str, tuple[str, ...]] = {
    "numerics probe": (CAPTURE, CAPTURE_TENSORS),
    "scan": (OPS,),
}
#: the FLOPs count's document in an entry (``recall`` and ``keep``)
FLOPS = "flops.json"
META = "probes.json"
PROBES_DIR = f"probes-v{SCHEMA_VERSION}"


def side_dir(fingerprint: str, side: str) -> Path:
    """Where a side's cached probes of a workload live (what the parent's estimate reads)."""
    safe = side.replace("+", "_").replace("=", "-").replace(":", "-").replace("/", "-")
    return cache_root() / PROBES_DIR / f"{fingerprint}-{safe}"


def has_cached(fingerprint: str, side: str, probe: str) -> bool:
    """Whether an entry of ``probe`` exists for the side (in some environment): the
    parent's guess for its estimate; the worker decides by its own key."""
    where = side_dir(fingerprint, side)
    return where.is_dir() and any(where.glob(f"{_slug(probe)}-*/{META}"))


def entry_key(job: Job, environment: Environment) -> str:
    """The sha256 that names an entry: the fingerprint, the side and the environment
    (where the side ran is recorded, not keyed)."""
    return sha256_json(
        [job.fingerprint, encode(job.side), encode(replace(environment, placement=None))]
    )


def entry_dir(job: Job, environment: Environment, probe: str) -> Path:
    key = entry_key(job, environment)
    return side_dir(job.fingerprint, str(job.side)) / f"{_slug(probe)}-{key[:32]}"


def reuse(entry: Path, out: Path) -> bool:
    """Copy a verified entry's files into the bundle directory ``out``; False (the entry
    removed where it exists but does not verify) when the probe must run."""
    if not (entry / META).is_file():
        return False
    copied: list[Path] = []
    try:
        for name in _verified(entry):
            (out / name).write_bytes(read_own(entry / name))  # no link followed or copied
            copied.append(out / name)
    except (OSError, ValueError, BundleError):
        for path in copied:
            path.unlink(missing_ok=True)
        shutil.rmtree(entry, ignore_errors=True)
        return False
    return True


def store(entry: Path, out: Path, probe: str) -> None:
    """Keep the probe's files just written to ``out`` as the entry (quietly nothing on an
    I/O error, or where another process stored it first)."""

    def fill(tmp: Path) -> None:
        for name in PROBE_FILES[probe]:
            if (out / name).is_file() and not (out / name).is_symlink():
                shutil.copyfile(out / name, tmp / name)

    _publish(entry, probe, fill)


def keep(entry: Path, probe: str, name: str, text: str) -> None:
    """Keep one document, ``text``, as the entry's file ``name`` (as ``store`` does)."""

    def fill(tmp: Path) -> None:
        (tmp / name).write_text(text)

    _publish(entry, probe, fill)


def recall(entry: Path, name: str) -> str | None:
    """The text of the entry's document ``name``, verified; None (the entry removed where
    it exists but does not verify) when the probe must run."""
    if not (entry / META).is_file():
        return None
    try:
        if name not in _verified(entry):
            raise ValueError(f"{entry} holds no {name}")
        return (entry / name).read_text()
    except (OSError, ValueError, UnicodeDecodeError):
        shutil.rmtree(entry, ignore_errors=True)
        return None


def _publish(entry: Path, probe: str, fill: Callable[[Path], None]) -> None:
    """An entry made in a hidden temporary directory (``fill`` writes its files there),
    each file's digest listed in ``probes.json``, then renamed into place."""
    if (entry / META).is_file():
        return
    tmp = entry.parent / f".{entry.name}.{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir(parents=True)
        fill(tmp)
        files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir())}
        (tmp / META).write_text(json.dumps({"probe": probe, "files": files}, sort_keys=True))
        tmp.rename(entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def _verified(entry: Path) -> dict[str, str]:
    """The entry's files and digests, each checked; ValueError where one differs."""
    meta = json.loads(read_own(entry / META))
    files = meta.get("files") if isinstance(meta, dict) else None
    if not isinstance(files, dict):
        raise ValueError(f"{entry / META} is not a probe entry")
    present = {p.name for p in entry.iterdir()} - {META}
    if present != set(files):
        raise ValueError(f"{entry} holds other files than it lists")
    for name, digest in files.items():
        path = entry / name
        if path.is_symlink() or not path.is_file() or sha256_bytes(read_own(path)) != digest:
            raise ValueError(f"{path} differs from what was stored")
    return {str(k): str(v) for k, v in files.items()}


def _slug(probe: str) -> str:
    return probe.replace(" ", "_")
