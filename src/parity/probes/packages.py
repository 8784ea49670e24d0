"""The installed distributions, read with ``importlib.metadata`` (no ``pip`` subprocess).

Each distribution is kept once, by its normalised name (PEP 503), as ``import`` would
find it: the first on ``sys.path`` wins over a shadowed copy (a virtual environment's over
the system's). Its origin comes from PEP 610's ``direct_url.json`` where the installer
wrote one: a local directory (editable or not), a version control checkout with its
commit, or an archive; the URL loses any user name and password, and anything
credential-like, before it is kept (``parity.safety.redact.url``).

The digest and the count are what every parity version wrote: sha256 over the sorted,
lower-cased ``Name==version`` lines of every distribution found (shadowed ones too), so a
bundle of today and one of an earlier parity in the same environment still agree.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Iterable
from functools import cache
from typing import Protocol

from parity.model.manifest import PipFreeze
from parity.model.stack import OriginKind, Package, PackageOrigin
from parity.safety.redact import url as clean_url
from parity.versions import normalise

#: more than any real environment holds; a manifest stays bounded all the same
MAX_PACKAGES = 5000


class Distribution(Protocol):
    """What is read of a distribution (``importlib.metadata.Distribution`` has it)."""

    @property
    def metadata(self) -> importlib.metadata.PackageMetadata: ...

    def read_text(self, filename: str) -> str | None: ...


def _name_version(dist: Distribution) -> tuple[str, str] | None:
    """The name and version from the metadata, parsed once (None: no name)."""
    try:
        meta = dist.metadata
        name, version = meta["Name"], meta["Version"]
    except (KeyError, OSError, ValueError):
        return None
    if not isinstance(name, str) or not name.strip():
        return None
    return name.strip(), version.strip() if isinstance(version, str) else ""


def origin(direct_url: str | None) -> PackageOrigin | None:
    """The origin ``direct_url.json`` records, or None (none, or not readable)."""
    if not direct_url:
        return None
    try:
        data = json.loads(direct_url)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return None
    where = clean_url(data["url"])
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        system, commit = vcs.get("vcs"), vcs.get("commit_id")
        return PackageOrigin(
            kind="vcs",
            url=where,
            vcs=system if isinstance(system, str) else None,
            commit=commit if isinstance(commit, str) else None,
        )
    kind: OriginKind = "archive"
    local = data.get("dir_info")
    if isinstance(local, dict):
        kind = "editable" if local.get("editable") is True else "directory"
    return PackageOrigin(kind=kind, url=where)


def _direct_url(dist: Distribution) -> str | None:
    try:
        return dist.read_text("direct_url.json")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def freeze(dists: Iterable[Distribution]) -> PipFreeze:
    """The digest, the count and the sorted list of ``dists`` (in ``sys.path`` order)."""
    lines: set[str] = set()
    first: dict[str, Package] = {}
    for dist in dists:
        read = _name_version(dist)
        if read is None:
            continue
        name, version = read
        lines.add(f"{name}=={version}".lower())
        key = normalise(name)
        found = origin(_direct_url(dist))
        # the installer's record (with its origin) over a source tree's bare egg-info
        if key not in first or (first[key].origin is None and found is not None):
            first[key] = Package(name=key, version=version, origin=found)
    listed = [first[k] for k in sorted(first)]
    return PipFreeze(
        sha256=hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest(),
        packages=len(lines),
        installed=tuple(listed[:MAX_PACKAGES]),
        truncated=True if len(listed) > MAX_PACKAGES else None,
    )


@cache
def installed() -> PipFreeze:
    """This interpreter's distributions, read once per process (the zygote reads them
    before forking: what is installed does not change under a comparison)."""
    return freeze(importlib.metadata.distributions())
