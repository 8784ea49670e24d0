"""The job a parent hands a worker: a JSON file, never a pickle."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

JOB_FILE = "job.json"
ERROR_FILE = "error.json"
EVENTS_FILE = "events.jsonl"


@dataclass(kw_only=True)
class Job:
    """Everything a worker needs to run one side once."""

    role: str
    side: str
    workload: dict[str, Any]
    frozen: str
    fingerprint: str
    parts: dict[str, Any]
    description: dict[str, Any]
    spawned_ns: int = 0
    repeat: int = 0
    settings: dict[str, Any] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, path: Path) -> Job:
        return cls(**json.loads(path.read_text()))
