"""The ``code`` part of a user workload's fingerprint: its file, its local modules and the
environment variables it reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from parity.workloads.code import literal_reads

WORKLOAD = """
import os
import helper
from parity.workloads.mlp import MlpTrain

SCALE = float(os.environ.get("I52_AT_IMPORT", "1"))

class W(MlpTrain):
    name = "w"
    def build_model(self):
        model = super().build_model()
        if os.getenv("I52_IN_STEP"):
            import lazy  # imported only when a model is built
        return model
"""


def test_literal_reads_finds_every_way_of_naming_a_variable() -> None:
    source = b"""
import os
from os import environ, getenv
a = os.environ["A"]
b = os.environ.get("B", "x")
c = os.getenv("C")
d = environ.get("D")
e = getenv("E")
f = os.environ.setdefault("F", "1")
g = {}.get("NOT_ENV")
h = os.environ.get(name)
"""
    assert literal_reads(source) == {"A", "B", "C", "D", "E", "F"}
    assert literal_reads(b"def (") == set()


def _code(tmp: Path, env: dict[str, str]) -> dict[str, object]:
    """The code source of ``tmp/w.py:W`` as a fresh process resolves it (as a worker does:
    a process imports a file once)."""
    program = (
        "import json, sys\n"
        "from parity.model.codec import encode\n"
        "from parity.model.spec import WorkloadSpec\n"
        "from parity.workloads import resolve\n"
        "w = resolve(WorkloadSpec(name=sys.argv[1], steps=2))\n"
        "print(json.dumps({'code': encode(w.code_source), 'part': w.describe() and "
        "__import__('parity.workloads.frozen', fromlist=['x']).freeze(w).parts.code}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program, f"{tmp / 'w.py'}:W"],
        env={"PATH": "/usr/bin:/bin", "PARITY_CACHE_DIR": str(tmp / "cache"), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    import json

    found: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow
def test_the_code_part_changes_with_the_file_a_local_module_and_an_env_var(
    tmp_path: Path,
) -> None:
    (tmp_path / "w.py").write_text(WORKLOAD)
    (tmp_path / "helper.py").write_text("X = 1\n")
    (tmp_path / "lazy.py").write_text("Y = 1\n")
    first = _code(tmp_path, {})
    code = first["code"]
    assert isinstance(code, dict)
    assert set(code["files"]) == {"w.py", "helper.py", "lazy.py"}
    assert code["environment"] == ["I52_AT_IMPORT", "I52_IN_STEP"]
    assert first["part"] == code["digest"]
    # the same code, and a variable it never reads: the same part
    assert _code(tmp_path, {"UNRELATED": "1"})["part"] == first["part"]
    seen = {first["part"]}
    for env, edit in (
        ({"I52_IN_STEP": "1"}, None),  # read only in a step: found in its source
        ({"I52_AT_IMPORT": "2"}, None),
        ({}, ("helper.py", "X = 2\n")),
        ({}, ("lazy.py", "Y = 2\n")),
        ({}, ("w.py", WORKLOAD + "\n# an edit\n")),
    ):
        if edit is not None:
            (tmp_path / edit[0]).write_text(edit[1])
        part = _code(tmp_path, env)["part"]
        assert part not in seen, (env, edit)
        seen.add(part)
