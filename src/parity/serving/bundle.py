"""A serving side's bundle: written whole or not at all, read back verified.

::

    serve.json        the endpoint as measured, how the side ended, its capacity
    load.json         the frozen load (schedule seed, token-ID prompts, fingerprint)
    steps.json        every step's figures, in the order run
    events.jsonl      every request of every step (stamps, tokens, status, redacted error)
    scrape.log        the server's /metrics at the end, where it has one
    server.*.log      the output of a server parity started
    digest.json       sha256 of every other file, written last

Written in a hidden sibling directory and renamed into place once sealed
(``bundle.seal``: logs redacted, digest written), as every parity bundle is. Only JSON
is read back, checked against the digest first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypeVar

from parity.bundle import (
    DIGEST,
    VERDICT,
    Digest,
    read_doc,
    read_hashed,
    seal,
    write_doc,
    write_text,
)
from parity.errors import BundleError
from parity.model.codec import DecodeError, decode, encode, loads
from parity.model.serving import (
    ROLES,
    Load,
    RequestEvent,
    ServeSide,
    ServeVerdict,
    StepFigures,
    Steps,
)

SERVE = "serve.json"
LOAD = "load.json"
STEPS = "steps.json"
EVENTS = "events.jsonl"
SCRAPE = "scrape.log"
T = TypeVar("T")


def is_serving(path: Path) -> bool:
    return (path / SERVE).is_file()


def is_serving_comparison(path: Path) -> bool:
    """A ``parity serve --out`` directory: its verdict and a serving side bundle."""
    return (path / VERDICT).is_file() and any(is_serving(path / r) for r in ROLES)


def side_of(path: Path) -> ServeSide:
    """A side's ``serve.json`` alone, checked against the side's digest (what the index
    keeps of a side, without reading its events)."""
    digest = read_doc(path / DIGEST, Digest)
    data, sha = read_hashed(path / SERVE)
    if digest.files.get(SERVE) != sha:
        raise BundleError(f"{path / SERVE} differs from what parity wrote; rerun that side")
    return _doc(path / SERVE, data, ServeSide)


def read_comparison(path: Path) -> tuple[ServeVerdict, str, dict[str, ServeSide]]:
    """A serving comparison's verdict (strictly decoded), the sha256 of its bytes, and
    each side's record that is there."""
    data, sha = read_hashed(path / VERDICT)
    verdict = _doc(path / VERDICT, data, ServeVerdict)
    return verdict, sha, {r: side_of(path / r) for r in ROLES if is_serving(path / r)}


def write(
    tmp: Path,
    final: Path,
    *,
    side: ServeSide,
    load: Load,
    steps: list[StepFigures],
    events: list[RequestEvent],
    scrape: str | None,
) -> None:
    """Write the documents into ``tmp`` (where the server's logs already are), seal it
    and rename it to ``final``."""
    write_doc(tmp / SERVE, side)
    write_doc(tmp / LOAD, load)
    write_doc(tmp / STEPS, Steps(steps=tuple(steps)))
    lines = (json.dumps(encode(e), allow_nan=False) + "\n" for e in events)
    write_text(tmp / EVENTS, "".join(lines))
    if scrape is not None:
        write_text(tmp / SCRAPE, scrape)
    seal(tmp)
    os.replace(tmp, final)


def _doc(path: Path, data: bytes, tp: type[T]) -> T:
    try:
        return decode(tp, loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, DecodeError) as exc:
        raise BundleError(f"{path}: {exc}: corrupt or edited; rerun that side") from None


class SideBundle:
    """A serving side's bundle, verified against its digest and decoded."""

    def __init__(self, path: Path) -> None:
        if not is_serving(path):
            raise BundleError(
                f"{path} is not a serving bundle (no {SERVE}): give a side of parity serve"
            )
        digest = read_doc(path / DIGEST, Digest)
        present = sorted(p.name for p in path.iterdir() if p.is_file() and p.name != DIGEST)
        if sorted(digest.files) != present:
            raise BundleError(f"{path}: its files are not the ones parity wrote; rerun that side")
        files: dict[str, bytes] = {}
        for name in present:
            data, sha = read_hashed(path / name)
            if sha != digest.files[name]:
                raise BundleError(f"{path / name} differs from what parity wrote; rerun that side")
            files[name] = data
        self.path = path
        self.side = _doc(path / SERVE, files[SERVE], ServeSide)
        self.load = _doc(path / LOAD, files[LOAD], Load)
        self.steps = _doc(path / STEPS, files[STEPS], Steps).steps
        self.events = tuple(
            _doc(path / EVENTS, line, RequestEvent)
            for line in files[EVENTS].splitlines()
            if line.strip()
        )

    def step(self, label: str) -> StepFigures | None:
        return next((s for s in self.steps if s.label == label), None)

    def outputs(self, label: str) -> dict[int, tuple[int, ...]]:
        """Each prompt's output token IDs at a step (good requests only)."""
        return {e.index: e.output_ids for e in self.events if e.step == label and e.status == "ok"}
