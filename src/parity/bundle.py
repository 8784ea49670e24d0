"""Run bundles: a directory per side and run, the unit of truth.

::

    manifest.json       schema_version, parity version, side, workload fingerprint,
                        status (ok | failed | incomplete) and reason, environment, settings
    metrics.json        phases, raw step samples, summaries, memory, throughput
    numerics.json       loss curve and output summaries
    numerics.safetensors  output tensors
    events.jsonl, stdout.log, stderr.log

A bundle is written into a temporary sibling directory and renamed into place when it is
complete (``finalize``), so a bundle under its final name is never half-written. Loading
reads JSON and safetensors only: no file in a bundle is ever unpickled, and a bundle that
holds any other kind of file is refused.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from parity.errors import BundleError

SCHEMA_VERSION = 1
STATUSES = ("ok", "failed", "incomplete")
ALLOWED_SUFFIXES = (".json", ".jsonl", ".log", ".safetensors")
MANIFEST = "manifest.json"


def write_json(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and an atomic rename."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")
    os.replace(tmp, path)


def temp_dir_for(final: Path) -> Path:
    """A fresh temporary directory next to where a bundle will live."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    return tmp


def finalize(tmp: Path, final: Path) -> Path:
    """Rename a finished temporary bundle into place (atomic on one filesystem)."""
    os.replace(tmp, final)
    return final


@dataclass
class Bundle:
    """A loaded bundle: its JSON documents, with tensors loaded on demand."""

    path: Path
    manifest: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    numerics: dict[str, Any] = field(default_factory=dict)
    ops: dict[str, Any] = field(default_factory=dict)
    capture: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return str(self.manifest["status"])

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def fingerprint(self) -> str:
        return str(self.manifest["workload"]["fingerprint"])

    @property
    def side(self) -> str:
        return str(self.manifest["side"]["spec"])

    def outputs(self) -> dict[str, torch.Tensor]:
        """The output tensors (safetensors only), empty if the run produced none."""
        return self._tensors("numerics.safetensors")

    def capture_tensors(self) -> dict[str, torch.Tensor]:
        """The numerics probe's samples (outputs, gradients, per-module values)."""
        return self._tensors("capture.safetensors")

    def _tensors(self, name: str) -> dict[str, torch.Tensor]:
        path = self.path / name
        if not path.is_file():
            return {}
        try:
            return load_file(str(path))
        except (SafetensorError, OSError, ValueError) as exc:
            raise BundleError(
                f"{path} is not a valid safetensors file ({exc}): the bundle is corrupt; "
                "rerun that side"
            ) from exc


def _read_json(path: Path, *, required: bool) -> dict[str, Any]:
    if not path.is_file():
        if required:
            raise BundleError(
                f"{path.parent} is not a parity bundle: it has no {path.name}; pass a "
                "directory written by parity run or parity compare"
            )
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(
            f"{path} is not valid JSON ({exc}): the bundle is corrupt or truncated; rerun that side"
        ) from exc
    if not isinstance(data, dict):
        raise BundleError(f"{path} must hold a JSON object: the bundle is corrupt")
    return data


def _check_fingerprint(path: Path, manifest: dict[str, Any]) -> None:
    """A manifest whose fingerprint does not hash its own parts was edited by hand."""
    from parity.workloads.frozen import FINGERPRINT_PARTS, fingerprint

    workload = manifest["workload"]
    parts = workload.get("parts") if isinstance(workload, dict) else None
    if not isinstance(parts, dict) or not all(p in parts for p in FINGERPRINT_PARTS):
        return
    if fingerprint(parts) != workload.get("fingerprint"):
        raise BundleError(
            f"{path / MANIFEST} has a fingerprint that does not match its parts: the bundle "
            "was edited after it was written; rerun that side"
        )


def load_bundle(path: Path | str) -> Bundle:
    """Load and check a bundle; BundleError (exit 2) names the problem and the fix."""
    path = Path(path)
    if not path.is_dir():
        raise BundleError(f"bundle {path} does not exist or is not a directory")
    for item in path.iterdir():
        if item.is_dir() or not item.name.endswith(ALLOWED_SUFFIXES):
            raise BundleError(
                f"bundle {path} holds {item.name!r}, which is not JSON, a log or safetensors: "
                "parity never loads other files (pickles included); remove it or rerun"
            )
    manifest = _read_json(path / MANIFEST, required=True)
    version = manifest.get("schema_version")
    if not isinstance(version, int):
        raise BundleError(f"{path / MANIFEST} has no integer schema_version: the bundle is corrupt")
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"bundle {path} has schema version {version}, newer than this parity reads "
            f"({SCHEMA_VERSION}): upgrade parity"
        )
    for key in ("status", "side", "workload"):
        if key not in manifest:
            raise BundleError(f"{path / MANIFEST} lacks {key!r}: the bundle is corrupt")
    if manifest["status"] not in STATUSES:
        raise BundleError(
            f"{path / MANIFEST} has status {manifest['status']!r}; expected one of "
            f"{', '.join(STATUSES)}"
        )
    side, workload = manifest["side"], manifest["workload"]
    if not isinstance(side, dict) or not isinstance(side.get("spec"), str):
        raise BundleError(
            f"{path / MANIFEST}: side must be an object with a spec string: the bundle is corrupt"
        )
    if not isinstance(workload, dict) or not isinstance(workload.get("fingerprint"), str):
        raise BundleError(
            f"{path / MANIFEST}: workload must be an object with a fingerprint: "
            "the bundle is corrupt"
        )
    _check_fingerprint(path, manifest)
    ok = manifest["status"] == "ok"
    return Bundle(
        path=path,
        manifest=manifest,
        metrics=_read_json(path / "metrics.json", required=ok),
        numerics=_read_json(path / "numerics.json", required=ok),
        ops=_read_json(path / "ops.json", required=False),
        capture=_read_json(path / "capture.json", required=False),
    )


SIDE_FILE = "side.json"
COMPLIANCE_RUNS = ("reseeded", "same-input")


@dataclass
class SideRuns:
    """One side of a comparison: its repeats (fresh processes) and compliance runs.

    On disk, a directory with one bundle per repeat (``r00``, ``r01``, ...), the
    compliance bundles (``reseeded``, ``same-input``) where they were run, and
    ``side.json`` with how measuring ended. A single bundle directory is a side with one
    repeat, so ``parity diff`` takes bundles from ``parity run`` as well.
    """

    path: Path
    repeats: list[Bundle]
    compliance: dict[str, Bundle] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> list[Bundle]:
        return [b for b in self.repeats if b.ok]

    @property
    def first(self) -> Bundle:
        return (self.ok or self.repeats)[0]


def repeat_name(index: int) -> str:
    return f"r{index:02d}"


def load_side(path: Path | str) -> SideRuns:
    """Load a side directory or a single bundle; BundleError names what is wrong."""
    path = Path(path)
    if (path / MANIFEST).is_file():
        return SideRuns(path=path, repeats=[load_bundle(path)])
    if not path.is_dir():
        raise BundleError(f"bundle {path} does not exist or is not a directory")
    repeats = sorted(
        p for p in path.iterdir() if p.is_dir() and p.name[:1] == "r" and p.name[1:].isdigit()
    )
    if not repeats:
        raise BundleError(
            f"{path} is neither a parity bundle nor a side directory (no manifest.json, no "
            "r00/): pass a directory written by parity run or parity compare"
        )
    for item in path.iterdir():
        if item.is_file() and item.name != SIDE_FILE:
            raise BundleError(
                f"side directory {path} holds {item.name!r}, which parity did not write: remove it"
            )
    compliance = {
        name: load_bundle(path / name) for name in COMPLIANCE_RUNS if (path / name).is_dir()
    }
    return SideRuns(
        path=path,
        repeats=[load_bundle(p) for p in repeats],
        compliance=compliance,
        info=_read_json(path / SIDE_FILE, required=False),
    )
