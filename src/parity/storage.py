"""Bundles at any fsspec URL: open, list and commit a directory tree in object storage.

``--out s3://bucket/prefix`` (also ``gs://``, ``az://``, ``file://``, or a local path)
writes a comparison or a run into a local staging directory as always, then ``publish``
uploads its files and writes ``COMMIT`` last: the sha256 of every file. A tree without
its commit marker does not exist for parity (``fetch`` refuses it), so a tree is visible
under its final name only when complete, whatever the object store allows.

``fetch`` downloads a committed tree into a local directory and checks every file's
sha256 against the marker before anything reads it; the bundle loader then checks each
bundle's own ``digest.json`` as for any local bundle. A URL below a tree's root (a side,
``s3://bucket/run1/baseline``) fetches the whole tree once per process, so a side is read
with the inputs its comparison stored beside it.

Credentials come from where the filesystem's library looks (for S3: the environment,
``~/.aws`` profiles, instance roles; ``AWS_ENDPOINT_URL_S3`` for another endpoint) and are
never written: a URL with a user, a password, a query (a signed URL) or a fragment is
refused before anything is read or written (``parity.safety.urls``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

from parity.errors import BundleError, OutputError, UsageError
from parity.safety import scratch
from parity.safety.redact import url as recorded
from parity.safety.urls import checked, safe_form

COMMIT = ".parity-commit.json"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: seconds to reach an object store before calling it unreachable
CONNECT_TIMEOUT_S = 5
_fetched: dict[str, Path] = {}


def is_url(target: str | Path) -> bool:
    """A remote URL (``file://`` is a local path)."""
    m = _SCHEME.match(str(target))
    return m is not None and m.group(1).lower() != "file"


def local(target: str | Path) -> Path:
    """A local path, or a ``file://`` URL as one."""
    text = str(target)
    if not text.lower().startswith("file://"):
        return Path(text)
    return Path(checked(text, "URL")[len("file://") :])


def local_dir(target: str, option: str) -> Path:
    """A directory option that takes a local path only (``--resume``): a URL refused in one
    line, shown without its query or credentials."""
    if is_url(target):
        raise UsageError(f"{option} takes a local directory, not {shown(target)}")
    return local(target)


def shown(url: str) -> str:
    return safe_form(url).rstrip("/")


def _options(protocol: str) -> dict[str, Any]:
    if protocol in ("s3", "s3a"):
        timeouts = {"connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": 60}
        return {"config_kwargs": {**timeouts, "retries": {"max_attempts": 2}}}
    return {}


def _filesystem(protocol: str) -> Any:
    """The filesystem for ``protocol``, made again when the endpoint in the environment
    changes (``AWS_ENDPOINT_URL_S3``)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return _made(protocol, endpoint)


@cache
def _made(protocol: str, endpoint: str | None) -> Any:
    import fsspec

    try:
        return fsspec.filesystem(protocol, skip_instance_cache=True, **_options(protocol))
    except (ImportError, ValueError) as exc:
        raise UsageError(
            f"cannot use {protocol}:// URLs ({exc}): pip install 'parity[cluster]' (s3fs) or "
            "the fsspec package for that store"
        ) from None


def split(url: str, option: str = "URL") -> tuple[Any, str]:
    """The filesystem of ``url`` and the path within it (OptionError naming ``option``
    where the URL carries a credential, a query or a fragment)."""
    url = checked(url, option)
    m = _SCHEME.match(url)
    if not m:
        raise UsageError(f"{url} is not a URL: use s3://BUCKET/PREFIX or a local path")
    fs = _filesystem(m.group(1).lower())
    return fs, str(fs._strip_protocol(url)).rstrip("/")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return recorded(text[0] if text else type(exc).__name__)


def check_destination(url: str) -> None:
    """Before anything runs: the bucket is reachable and nothing is committed at ``url``;
    UsageError naming the problem and the fix otherwise."""
    fs, path = split(url, "--out")
    bucket = path.split("/", 1)[0]
    try:
        fs.ls(bucket, detail=False)
        taken = fs.exists(f"{path}/{COMMIT}")
        left = [] if taken or path == bucket else _objects(fs, path)
    except FileNotFoundError:
        raise UsageError(
            f"--out {shown(url)}: the bucket {bucket!r} does not exist: create it or choose "
            "another --out"
        ) from None
    except PermissionError as exc:
        raise UsageError(
            f"--out {shown(url)}: access denied ({_reason(exc)}): check the credentials "
            "(environment, profile) for that bucket"
        ) from None
    except Exception as exc:  # the store's own errors: endpoint down, bad credentials
        raise UsageError(
            f"--out {shown(url)}: cannot reach the store ({_reason(exc)}): check the endpoint, "
            "network and credentials"
        ) from None
    if taken:
        raise UsageError(f"--out {shown(url)} already holds a committed run: choose a new --out")
    if left:
        raise UsageError(
            f"--out {shown(url)} already holds {len(left)} object(s) (e.g. "
            f"{left[0][len(path) + 1 :]}), a run that did not finish or another's files: "
            "finish it with --resume, remove them, or choose a new --out"
        )


def _objects(fs: Any, path: str) -> list[str]:
    """The objects under the prefix ``path`` (none where it does not exist)."""
    fs.invalidate_cache(path)
    try:
        return sorted(str(p) for p in fs.find(path))
    except FileNotFoundError:
        return []


def staging() -> Path:
    """A fresh local directory (not yet made) to write a run into before ``publish``: a
    scratch directory's (``parity.safety.scratch``), gone when this process ends."""
    return scratch.make("out") / "out"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.is_file() and not p.is_symlink())


def upload(tree: Path, url: str, part: str = "") -> None:
    """Upload the files under ``tree/part`` to ``url/part``, with no commit marker: a
    finished bundle of a run still under way, so that ``--resume URL`` finds it after the
    driver is lost (each bundle verifies itself by its own digest when read back)."""
    fs, root = split(url)
    # a bundle's digest last: where it is, every file it names is there before it
    files = sorted(_files(tree / part if part else tree), key=lambda f: f.name == "digest.json")
    for file in files:
        fs.pipe_file(f"{root}/{file.relative_to(tree).as_posix()}", file.read_bytes())


def publish(tree: Path, url: str) -> str:
    """Upload every file under ``tree`` to ``url``, remove what is there and not in the
    tree (a bundle a resumed run replaced), then write the commit marker (last; a marker
    already there is removed first, so the tree is invisible while it changes)."""
    fs, root = split(url)
    if fs.exists(f"{root}/{COMMIT}"):
        fs.rm_file(f"{root}/{COMMIT}")
    digests: dict[str, str] = {}
    before = set(_objects(fs, root))
    try:
        for file in _files(tree):
            rel = file.relative_to(tree).as_posix()
            data = file.read_bytes()
            digests[rel] = sha256(data)
            fs.pipe_file(f"{root}/{rel}", data)
        for stale in _objects(fs, root):
            if stale[len(root) + 1 :] not in digests:
                fs.rm_file(stale)
        marker = {"schema_version": 1, "algorithm": "sha256", "files": digests}
        fs.pipe_file(f"{root}/{COMMIT}", json.dumps(marker, indent=1).encode())
    except BaseException as exc:
        # nothing half-uploaded stays, but the bundles a run uploaded as it went (``upload``):
        # with them ``--resume URL`` finishes it
        for rel in digests:
            if f"{root}/{rel}" not in before:
                with contextlib.suppress(Exception):
                    fs.rm_file(f"{root}/{rel}")
        if isinstance(exc, Exception):
            kept = (
                "the bundles uploaded before are kept: --resume it"
                if before
                else ("nothing was left there")
            )
            raise OutputError(
                f"cannot publish to {shown(url)} ({_reason(exc)}): {kept}; check the store "
                "and run again"
            ) from None
        raise
    return shown(url)


def unfinished(url: str) -> bool:
    """Objects at ``url`` and no commit marker: a run stopped mid-way, to resume."""
    fs, root = split(url)
    return not fs.exists(f"{root}/{COMMIT}") and bool(_objects(fs, root))


def put(url: str, data: bytes) -> str:
    """One object at ``url`` (a sweep's summary beside its cells)."""
    fs, path = split(url)
    fs.pipe_file(path, data)
    return shown(url)


def fetch_unfinished(url: str) -> Path:
    """A local copy of the run at ``url`` to resume: a committed one checked against its
    marker (``fetch``), else every object under the prefix as it is (the bundles among
    them are verified by their own digests when the resumed run reads them)."""
    fs, root = split(url)
    try:
        if fs.exists(f"{root}/{COMMIT}"):
            return _download(fs, root, shown(url))
        found = _objects(fs, root)
    except (OSError, ValueError) as exc:
        raise BundleError(f"cannot read {shown(url)} ({_reason(exc)}): check the URL") from None
    if not found:
        raise BundleError(f"{shown(url)} holds nothing to resume: check the URL")
    copy = scratch.make("resume") / "out"  # gone when this process ends
    for obj in found:
        rel = obj[len(root) + 1 :]
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            continue
        target = copy / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fs.cat_file(obj))
    return copy


def _root_of(fs: Any, path: str) -> str:
    """The committed tree ``path`` lies in: itself or the nearest parent with a marker."""
    parts = path.split("/")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end])
        if fs.exists(f"{candidate}/{COMMIT}"):
            return candidate
    raise BundleError(
        f"{path} holds no committed parity run (no {COMMIT} at it or above it): it is "
        "missing, or its upload did not finish; run it again"
    )


def fetch(url: str) -> Path:
    """A local copy of the committed tree ``url`` lies in, every file checked against the
    marker; returns the local path that corresponds to ``url``."""
    fs, path = split(url)
    try:
        root = _root_of(fs, path)
        if root not in _fetched or not _fetched[root].is_dir():
            _fetched[root] = _download(fs, root, shown(url))
    except (OSError, ValueError) as exc:
        raise BundleError(f"cannot read {shown(url)} ({_reason(exc)}): check the URL") from None
    rel = path[len(root) :].strip("/")
    return _fetched[root] / rel if rel else _fetched[root]


def _download(fs: Any, root: str, what: str) -> Path:
    marker = json.loads(fs.cat_file(f"{root}/{COMMIT}"))
    files = marker.get("files") if isinstance(marker, dict) else None
    if not isinstance(files, dict):
        raise BundleError(f"{what}: its {COMMIT} is not a parity commit marker: run it again")
    present = {p[len(root) + 1 :] for p in fs.find(root)} - {COMMIT}
    extra = sorted(present - set(files))
    if extra:
        raise BundleError(f"{what}: {extra[0]} was added after the run was committed: remove it")
    local_root = scratch.make("url")  # gone when this process ends
    try:
        _copy_checked(fs, root, files, local_root, what)
    except BaseException:
        scratch.remove(local_root)
        raise
    return local_root


def _copy_checked(fs: Any, root: str, files: dict[str, str], local_root: Path, what: str) -> None:
    for rel, digest in sorted(files.items()):
        if rel.startswith("/") or ".." in rel.split("/"):
            raise BundleError(f"{what}: its {COMMIT} names {rel!r}, outside the run")
        data = fs.cat_file(f"{root}/{rel}")
        if sha256(data) != digest:
            raise BundleError(
                f"{what}: {rel} differs from what parity wrote (its sha256 does not match "
                f"{COMMIT}): the run was edited; run it again"
            )
        target = local_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def committed(prefix: str) -> list[str]:
    """The URLs of the committed trees at or under ``prefix``."""
    fs, path = split(prefix)
    protocol = _SCHEME.match(prefix).group(1)  # type: ignore[union-attr]
    try:
        found = [p for p in fs.find(path) if p.rsplit("/", 1)[-1] == COMMIT]
    except FileNotFoundError:
        return []
    return sorted(f"{protocol}://{p.rsplit('/', 1)[0]}" for p in found)


def exists(target: str) -> bool:
    """A local directory, or a committed tree at a URL."""
    if not is_url(target):
        return local(target).is_dir()
    fs, path = split(target)
    try:
        _root_of(fs, path)
    except (BundleError, OSError):
        return False
    return True


def readable(target: str | Path) -> Path:
    """Where to read ``target`` from: a local path as given, a URL fetched (and checked)."""
    return fetch(str(target)) if is_url(target) else local(target)
