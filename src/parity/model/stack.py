"""The software stack: the installed distributions a manifest keeps, how two sides' lists
differ, the versions a plan pins and the drift from them, and the git state of a user's
script or workload file.

A manifest lists every distribution its worker's interpreter can import (one per name:
the first on ``sys.path``, as ``import`` finds it), with where it came from when that was
not a package index (PEP 610's ``direct_url.json``). URLs are kept without any user name
or password.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from parity.model.codec import omit_none

#: a local directory (``pip install ./dir``), an editable install of one, a version
#: control checkout, or an archive (a wheel or sdist file or URL)
OriginKind = Literal["directory", "editable", "vcs", "archive"]
PackageChange = Literal["added", "removed", "version", "origin"]
PinStatus = Literal["ok", "drift", "missing", "unknown"]


@dataclass(frozen=True, kw_only=True, slots=True)
class PackageOrigin:
    """Where a distribution was installed from, when not from a package index."""

    kind: OriginKind
    #: the URL, without user name or password
    url: str
    vcs: str | None = omit_none()
    commit: str | None = omit_none()

    def __str__(self) -> str:
        if self.kind == "vcs":
            at = f"@{self.commit[:12]}" if self.commit else ""
            return f"{self.vcs or 'vcs'} {self.url}{at}"
        return f"{self.kind} {self.url}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Package:
    """An installed distribution: its normalised name (PEP 503), version and origin."""

    name: str
    version: str
    origin: PackageOrigin | None = omit_none()

    @property
    def label(self) -> str:
        """The version, and the origin where there is one: ``1.1 (editable file:///src)``."""
        return self.version if self.origin is None else f"{self.version} ({self.origin})"


@dataclass(frozen=True, kw_only=True, slots=True)
class PackageDifference:
    """A package that differs between the sides: added on the target, removed from it, at
    another version, or at the same version from another origin."""

    name: str
    change: PackageChange
    baseline: Package | None
    target: Package | None
    #: torch or a backend package (listed first)
    backend: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class PinCheck:
    """A pinned package on each side: ``ok``, ``drift`` (installed outside the pin),
    ``missing`` (not installed) or ``unknown`` (the bundle predates package lists)."""

    package: str
    pin: str
    baseline: str | None
    target: str | None
    baseline_status: PinStatus
    target_status: PinStatus

    @property
    def drifted(self) -> bool:
        return {self.baseline_status, self.target_status} & {"drift", "missing"} != set()

    def status(self, role: str) -> PinStatus:
        return self.baseline_status if role == "baseline" else self.target_status


@dataclass(frozen=True, kw_only=True, slots=True)
class Pins:
    """The versions the plan pins, checked on both sides. Drift is reported, not gated:
    the comparison still measured what was installed."""

    checks: tuple[PinCheck, ...]
    #: the pinned packages outside their pin (or missing) on either side
    drifted: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceRepository:
    """The git repository a script or workload file lives in: its ``HEAD`` commit, and
    whether the work tree differs from it (a tracked file changed, or the file itself not
    committed; None: git could not tell)."""

    commit: str
    dirty: bool | None

    def __str__(self) -> str:
        state = {True: " (uncommitted changes)", False: "", None: " (work tree state unknown)"}
        return f"{self.commit[:12]}{state[self.dirty]}"
