"""``--data FILE[:FIELD]``: a frozen sample of the team's own data, and file digests.

The sample is read once, in the parent, when the workload is frozen: its text is
tokenized with the model's tokenizer (UTF-8 bytes where there is none) into the frozen
workload's data, and the file's digest enters the fingerprint's data part. Formats, by
suffix or kind:

- a directory: a ``datasets`` dataset saved with ``save_to_disk`` (``load_from_disk``);
  ``FIELD`` is a column, or ``SPLIT/COLUMN`` for a dataset dict (default split ``train``);
- ``.jsonl`` / ``.ndjson``: one JSON object per line, ``FIELD`` its key;
- ``.csv`` / ``.tsv``: ``FIELD`` a column of the header;
- ``.parquet``: ``FIELD`` a column (needs pyarrow);
- anything else: plain UTF-8 text, one document per non-empty line.

``FIELD`` defaults to ``text``. Two ways to make sequences: *packed* (causal and masked
LM, generation: documents joined by a separator token and cut into consecutive windows,
every token real) and *documents* (embedding, classification, inference: one document
per row, truncated or padded to the sequence length, with an attention mask). Where the
file holds fewer tokens or documents than the sample needs, it is read again from the
start. Digests of files and directories are cached by path, size and mtime under
``PARITY_CACHE_DIR/digests``, so a large checkpoint is hashed once.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import importlib
import json
import os
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from parity.errors import WorkloadError
from parity.workloads.datasource import Format, parse_source
from parity.workloads.frozen import cache_root, canonical

CHUNK = 1 << 20


# -- digests ------------------------------------------------------------------------------
def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, cached by its absolute path, size and mtime."""
    path = path.resolve()
    stat = path.stat()
    key = hashlib.sha256(str(path).encode()).hexdigest()[:32]
    entry = cache_root() / "digests" / f"{key}.json"
    stamp = {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    try:
        cached = json.loads(entry.read_text())
        if {k: cached.get(k) for k in stamp} == stamp:
            return str(cached["sha256"])
    except (OSError, ValueError, KeyError):
        pass
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    digest = h.hexdigest()
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_name(f".{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps({**stamp, "sha256": digest}))
    os.replace(tmp, entry)  # atomic: concurrent workers read a whole entry or none
    return digest


def files_digest(root: Path, files: list[Path]) -> str:
    """One digest over files named relative to ``root`` (name and bytes of each)."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        h.update(canonical([f.relative_to(root).as_posix(), file_digest(f)]))
    return h.hexdigest()


def visible_files(root: Path) -> list[Path]:
    """Every regular file under ``root``, skipping hidden names (``.cache``, ``.git``)."""
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]


def digest(path: Path) -> str:
    """A file's digest, or a directory's over its visible files."""
    return files_digest(path, visible_files(path)) if path.is_dir() else file_digest(path)


# -- the source ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class DataSource:
    """Where the sample comes from: a path, its format and the field holding text."""

    path: Path
    format: Format
    field: str

    def describe(self) -> dict[str, str]:
        """What enters the workload's config (not the path: the same bytes elsewhere
        are the same data; the bytes enter through ``digest``)."""
        return {"format": self.format, "field": self.field}

    def digest(self) -> str:
        return digest(self.path)


def parse_data(text: str) -> DataSource:
    """``FILE`` or ``FILE:FIELD`` (checked by ``datasource.parse_source``, as the
    request did before any worker started)."""
    path, fmt, field = parse_source(text)
    return DataSource(path=path, format=fmt, field=field)


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as f:
        yield from (line.rstrip("\n") for line in f if line.strip())


def _jsonl(src: DataSource) -> Iterator[object]:
    for n, line in enumerate(_lines(src.path), 1):
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise WorkloadError(f"--data {src.path} line {n} is not JSON: {exc}") from None
        if not isinstance(row, dict) or src.field not in row:
            raise WorkloadError(
                f"--data {src.path} line {n} has no field {src.field!r}: name the field "
                f"holding text with --data {src.path.name}:FIELD"
            )
        yield row[src.field]


def _column(src: DataSource, column: str, names: list[str]) -> None:
    if column not in names:
        raise WorkloadError(
            f"--data {src.path} has no column {column!r}: use one of {', '.join(names)} "
            f"as --data {src.path.name}:COLUMN"
        )


def _optional(module: str, src: DataSource, package: str) -> Any:
    """An optional package's module, or a WorkloadError naming the install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise WorkloadError(
            f"--data {src.path.name}: reading it needs {package}: pip install {package}"
        ) from None


def _csv(src: DataSource) -> Iterator[object]:
    with src.path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t" if src.path.suffix.lower() == ".tsv" else ",")
        _column(src, src.field, list(reader.fieldnames or []))
        yield from (row[src.field] for row in reader)


def _parquet(src: DataSource) -> Iterator[object]:
    table = _optional("pyarrow.parquet", src, "pyarrow").ParquetFile(str(src.path))
    _column(src, src.field, list(table.schema_arrow.names))
    for batch in table.iter_batches(columns=[src.field], batch_size=1024):
        yield from batch.column(0).to_pylist()


def _datasets(src: DataSource) -> Iterator[object]:
    datasets = _optional("datasets", src, "datasets")
    ds = datasets.load_from_disk(str(src.path))
    split, _, column = src.field.rpartition("/")
    if isinstance(ds, datasets.DatasetDict):
        split = split or "train"
        if split not in ds:
            raise WorkloadError(
                f"--data {src.path} has no split {split!r}: use one of {', '.join(ds)} "
                f"as --data {src.path.name}:SPLIT/{column}"
            )
        ds = ds[split]
    elif split:
        raise WorkloadError(
            f"--data {src.path} is one dataset, not a dict of splits: drop {split}/"
        )
    _column(src, column, list(ds.column_names))
    for batch in ds.select_columns([column]).iter(batch_size=1024):
        yield from batch[column]


READERS: dict[Format, Callable[[DataSource], Iterator[object]]] = {
    "text": lambda src: _lines(src.path),
    "jsonl": _jsonl,
    "csv": _csv,
    "parquet": _parquet,
    "datasets": _datasets,
}


def documents(src: DataSource) -> Generator[str, None, None]:
    """The documents of a source, read again from the start when it runs out."""
    while True:
        count = 0
        for value in READERS[src.format](src):
            if not isinstance(value, str):
                raise WorkloadError(
                    f"--data {src.path}: field {src.field!r} holds a "
                    f"{type(value).__name__}, not text: name a text field"
                )
            if value.strip():
                count += 1
                yield value
        if not count:
            raise WorkloadError(f"--data {src.path} holds no text in {src.field!r}")


# -- tokens -------------------------------------------------------------------------------
class ByteTokens:
    """UTF-8 bytes as token ids (256 of them), for models without a tokenizer."""

    name = "bytes"
    separator: int | None = ord("\n")
    pad = 0

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def document(self, text: str, length: int) -> list[int]:
        return self.encode(text)[:length]


class HfTokens:
    """A transformers tokenizer: ids without special tokens for packing, with them (the
    model's ``[CLS] ... [SEP]``) for one document per row."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.name = type(tokenizer).__name__
        eos, sep = tokenizer.eos_token_id, tokenizer.sep_token_id
        self.separator: int | None = eos if eos is not None else sep
        pad = tokenizer.pad_token_id
        self.pad: int = int(pad if pad is not None else (self.separator or 0))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def document(self, text: str, length: int) -> list[int]:
        return list(self.tokenizer(text, truncation=True, max_length=length)["input_ids"])


Tokens = ByteTokens | HfTokens


def packed(src: DataSource, tokens: Tokens, count: int, length: int) -> torch.Tensor:
    """``count`` consecutive windows of ``length`` tokens of the documents joined by the
    separator: ``[count, length]`` int64."""
    need = count * length
    stream: list[int] = []
    with contextlib.closing(documents(src)) as docs:
        for text in docs:
            stream += tokens.encode(text)
            if tokens.separator is not None:
                stream.append(tokens.separator)
            if len(stream) >= need:
                break
    return torch.tensor(stream[:need], dtype=torch.long).view(count, length)


def rows(src: DataSource, tokens: Tokens, count: int, length: int) -> dict[str, torch.Tensor]:
    """``count`` documents, one per row, truncated or padded to ``length``:
    ``input_ids`` and ``attention_mask``, ``[count, length]`` int64."""
    ids = torch.full((count, length), tokens.pad, dtype=torch.long)
    mask = torch.zeros((count, length), dtype=torch.long)
    with contextlib.closing(documents(src)) as docs:
        for i, text in zip(range(count), docs, strict=False):
            row = tokens.document(text, length)
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
    return {"input_ids": ids, "attention_mask": mask}
