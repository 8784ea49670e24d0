"""``--data FILE[:FIELD]`` as given: the file, its format and its field, checked without
importing torch, so that the request refuses a missing file or a field a format cannot
have before any worker starts (``parity.workloads.sample`` reads the sample)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from parity.errors import WorkloadError

Format = Literal["text", "jsonl", "csv", "parquet", "datasets"]
SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
}


def parse_source(text: str) -> tuple[Path, Format, str]:
    """``FILE`` or ``FILE:FIELD`` as (the resolved path, its format, the field);
    WorkloadError names a missing file or a field its format cannot have."""
    path, field = Path(text).expanduser(), "text"
    if not path.exists():
        head, sep, tail = text.rpartition(":")
        if sep and head and Path(head).expanduser().exists():
            path, field = Path(head).expanduser(), tail.strip()
        else:
            raise WorkloadError(f"--data {text}: no such file or directory: check the path")
    if not field:
        raise WorkloadError(f"--data {text}: the field after ':' is empty: write FILE:FIELD")
    fmt: Format = "datasets" if path.is_dir() else SUFFIXES.get(path.suffix.lower(), "text")
    if fmt == "text" and field != "text":
        raise WorkloadError(
            f"--data {text}: a plain text file has no fields: drop ':{field}', or use "
            "JSONL, CSV or Parquet"
        )
    return path.resolve(), fmt, field


def takes_no_data(name: str) -> WorkloadError:
    """The refusal of ``--data`` for a workload that reads none."""
    return WorkloadError(
        f"workload {name} takes no --data: drop it, or use gpt-train, gpt-generate or a "
        "checkpoint (hf:PATH)"
    )
