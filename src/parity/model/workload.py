"""What identifies a frozen workload: its fingerprint parts and its description."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Literal

from parity.model.codec import Json, JsonObject, omit_none
from parity.model.estimate import StepCost
from parity.model.spec import Task, WorkloadSpec
from parity.model.stack import SourceRepository

Kind = Literal["train", "infer", "generate"]
#: where a checkpoint was found: a directory, or the local Hugging Face cache
Origin = Literal["directory", "hub cache"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FingerprintParts:
    """Each part of the fingerprint on its own, so that a mismatch can be named.

    Hashes are sha256 hex digests; script mode never sees the weights or the data, so
    those parts (and the size knobs) are null there."""

    config: str
    weights: str | None
    data: str | None
    batch_size: int | None
    seq_len: int | None
    steps: int | None
    seed: int | None
    quality: str
    #: a user's workload file: its code, the local modules it imports and the
    #: environment variables it reads (``CodeSource.digest``); None for parity's own
    #: workloads, whose code is parity's version
    code: str | None = omit_none()

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def value(self, name: str) -> str | int | None:
        value: str | int | None = getattr(self, name)
        return value

    def digest(self) -> str:
        """The fingerprint: sha256 over every part, in canonical JSON (an absent code part
        left out, so that a built-in's fingerprint is what it was before it existed)."""
        present: Json = {
            n: self.value(n) for n in self.names() if n != "code" or self.code is not None
        }
        return hashlib.sha256(canonical(present)).hexdigest()

    def differing(self, other: FingerprintParts) -> tuple[str, ...]:
        return tuple(n for n in self.names() if self.value(n) != other.value(n))


def canonical(value: Json) -> bytes:
    """JSON with sorted keys and no spaces: the bytes that are hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def sha256_json(value: Json) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class QualitySpec:
    """The quality checks a workload's verdict applies (part of the fingerprint)."""

    kind: Kind
    checks: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Sources:
    """Digests (sha256) of the files a workload reads, by the fingerprint part they feed:
    a checkpoint's weights; a ``--data`` file and a tokenizer. They enter that part and
    the frozen cache's key, so a changed byte is never served from the cache."""

    weights: str | None = omit_none()
    data: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class CodeSource:
    """What a user's workload file runs besides its spec (``parity.workloads.code``):
    the sha256 of each code file (the file and the local modules it imports, named
    relative to the file's directory) and the names of the environment variables it
    reads; ``digest`` covers both and the variables' values, which are never written."""

    digest: str
    files: dict[str, str]
    environment: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckpointSource:
    """Where an ``hf:PATH`` or ``hf:ORG/NAME`` checkpoint was found (not its path: the
    same bytes elsewhere are the same checkpoint)."""

    origin: Origin
    #: the repository id, or the directory's name
    id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkloadDescription:
    """Everything that defines a workload, as its ``describe()`` gives it."""

    name: str
    kind: Kind
    size: str
    config: JsonObject = field(default_factory=dict)
    batch_size: int | None = None
    seq_len: int | None = None
    steps: int | None = None
    seed: int | None = None
    quality: QualitySpec
    #: versions of the libraries that build the model (``transformers`` for ``hf:``): they
    #: key the frozen cache, not the fingerprint (the weights' hash says whether two
    #: versions built the same model)
    packages: dict[str, str] | None = omit_none()
    #: script mode: the contract is unverified, and why
    contract: str | None = omit_none()
    #: digests of the files the workload read (a checkpoint, ``--data``, a tokenizer)
    sources: Sources | None = omit_none()
    #: a user's workload file: its code and the environment variables it reads (the
    #: fingerprint's ``code`` part)
    code: CodeSource | None = omit_none()
    #: ``--data`` as given (the digest in ``sources`` is what identifies its bytes)
    data_file: str | None = omit_none()
    #: ``hf:PATH`` and ``hf:ORG/NAME``: the checkpoint, and what it was run for
    checkpoint: CheckpointSource | None = omit_none()
    task: Task | None = omit_none()
    #: the git repository a script or workload file lives in: its commit and whether it
    #: has uncommitted changes (recorded, not fingerprinted)
    repository: SourceRepository | None = omit_none()
    #: the model's parameter count and a training workload's optimizer (``adamw``): the
    #: shape the verdict compares with a declared production shape (recorded, not
    #: fingerprinted)
    parameters: int | None = omit_none()
    optimizer: str | None = omit_none()

    @property
    def script_mode(self) -> bool:
        return self.contract is not None


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkloadRef:
    """The workload a bundle ran: the spec asked for, its fingerprint and description."""

    spec: WorkloadSpec
    fingerprint: str
    parts: FingerprintParts
    description: WorkloadDescription


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedWorkload:
    """``prepared.json``: what a ``freeze`` job made of a workload spec, all the parent
    learns of a workload (it never imports the user's code): the description, and where
    it was frozen, the directory, fingerprint and parts; warnings to pass on (a cache
    entry that had to be rebuilt)."""

    description: WorkloadDescription
    frozen: str | None = omit_none()
    fingerprint: str | None = omit_none()
    parts: FingerprintParts | None = omit_none()
    warnings: tuple[str, ...] = ()
    #: cheap figures for the pre-run estimate (a comparison's ``freeze`` job only)
    cost: StepCost | None = omit_none()

    @property
    def name(self) -> str:
        return self.description.name

    @property
    def kind(self) -> Kind:
        return self.description.kind

    @property
    def steps(self) -> int | None:
        return self.description.steps

    @property
    def batch_size(self) -> int | None:
        return self.description.batch_size
