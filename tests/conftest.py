"""Shared fixtures: an isolated cache for frozen workloads, and CLI helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Frozen workloads go to a temporary cache that workers inherit via the env."""
    old = os.environ.get("PARITY_CACHE_DIR")
    os.environ["PARITY_CACHE_DIR"] = str(tmp_path_factory.mktemp("parity-cache"))
    yield
    if old is None:
        os.environ.pop("PARITY_CACHE_DIR", None)
    else:
        os.environ["PARITY_CACHE_DIR"] = old


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real ``parity`` command in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "parity", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def load_json(text: str) -> Any:
    return json.loads(text)
