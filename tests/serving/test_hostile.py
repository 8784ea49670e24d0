"""The serving client against servers an adversary runs: an API key echoed back (in a
stream, in an error body) is written nowhere; a server that streams without end, sends
one enormous line or starts streaming without end mid-run is one line or a failed
request, in seconds, never a traceback or a hang."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import hostile_server

KEY = "zqPlantedServingKey9981"
SERVER = Path(hostile_server.__file__)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    urls, procs = {}, []
    for mode in ("echo", "error", "endless", "later", "huge"):
        port = _port()
        procs.append(
            subprocess.Popen(
                [sys.executable, str(SERVER), str(port), mode],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        urls[mode] = f"http://127.0.0.1:{port}"
    try:
        for url in urls.values():
            port = int(url.rsplit(":", 1)[1])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.2)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)


def _serve(out: Path, baseline: str, target: str) -> tuple[int, str, str]:
    res = run_cli(
        "serve", "--baseline-url", baseline, "--target-url", target,
        "--api-key-env", "SERVING_CREDS", "--requests", "8", "--warmup", "1",
        "--quality-prompts", "2", "--max-steps", "2", "--out", str(out),
        env={"SERVING_CREDS": KEY}, process=True, timeout=400,
    )  # fmt: skip
    return res.returncode, res.stdout, res.stderr


def _leaks(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


@pytest.mark.slow
def test_an_echoed_key_is_written_nowhere(servers: dict[str, str], tmp_path: Path) -> None:
    code, stdout, stderr = _serve(tmp_path / "o", servers["echo"], servers["echo"])
    assert code in (0, 1, 3), stderr
    assert KEY not in stdout + stderr and _leaks(tmp_path / "o") == []
    code, stdout, stderr = _serve(tmp_path / "e", servers["error"], servers["echo"])
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert KEY not in stdout + stderr


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "said"), [("endless", "streamed past"), ("huge", "cannot read")])
def test_an_endless_or_enormous_stream_is_one_line(
    servers: dict[str, str], tmp_path: Path, mode: str, said: str
) -> None:
    began = time.monotonic()
    code, _, stderr = _serve(tmp_path / "o", servers["echo"], servers[mode])
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "internal error" not in lines[0], stderr
    assert time.monotonic() - began < 110  # not the probe's 120 s timeout


@pytest.mark.slow
def test_a_stream_that_turns_endless_mid_run_fails_its_requests(
    servers: dict[str, str], tmp_path: Path
) -> None:
    code, stdout, stderr = _serve(tmp_path / "o", servers["echo"], servers["later"])
    assert code in (1, 3), stderr
    assert "not good: error" in stdout
