"""The scripted server (``parity.testing.scripted``) started as a real process, as
``parity serve`` starts a side's server command."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiohttp", reason="the serving client needs the serve extra (aiohttp)")

from parity.serving.server import Started, start
from parity.testing.pace import patience


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scripted_command(port: int, **script: object) -> list[str]:
    args = [sys.executable, "-m", "parity.testing.scripted", "--port", str(port)]
    for key, value in script.items():
        flag = "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start a scripted server with the given script; returns its base URL."""
    started: list[Started] = []

    def make(**script: object) -> str:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        logs = tmp_path / f"server-{port}"
        started.append(
            start(scripted_command(port, **script), base, logs, ready_timeout_s=patience(60))
        )
        return base

    yield make
    for s in started:
        s.stop()
