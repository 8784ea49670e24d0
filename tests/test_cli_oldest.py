"""The command line on the oldest Typer, Click and Rich the package allows.

A lent GPU machine's image (scripts/gpu-check) brings its own Typer, Click and Rich, of
whatever versions it holds; parity runs there from src/ with nothing installed. These
tests install the floors of ``pyproject.toml`` (Typer's own floor for Click) into a folder
of their own (fetched once from the package index, into ``~/.cache/parity-tests``) and
run the command line on them: errors stay one line with exit code 2, a bare group shows
its help with exit code 2, and tables still fit 80 columns.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.runs import synthetic_run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

pytestmark = [pytest.mark.slow, pytest.mark.nightly]  # builds a venv of the floors

ROOT = Path(__file__).parent.parent
#: Typer 0.12's own floor for Click (the newer Click of the main environment, which
#: reports a bare group differently, is what every other CLI test runs on)
CLICK_FLOOR = "8.0.0"
PIP = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]


def floors() -> dict[str, str]:
    """``name -> version`` of the ``name>=version`` floors of Typer and Rich."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    found = {}
    for dep in deps:
        m = re.fullmatch(r"(typer|rich)>=([0-9.]+)", dep.strip())
        if m:
            found[m.group(1)] = m.group(2)
    assert set(found) == {"typer", "rich"}, deps
    return found


@pytest.fixture(scope="module")
def oldest() -> Path:
    pins = [f"{name}=={version}" for name, version in sorted(floors().items())]
    pins.append(f"click=={CLICK_FLOOR}")
    folder = Path.home() / ".cache" / "parity-tests" / ("oldest-" + "-".join(pins))
    if not (folder / "typer").is_dir():
        got = subprocess.run(
            [*PIP, "--no-deps", "--target", str(folder), *pins],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if got.returncode != 0 or not (folder / "typer").is_dir():
            pytest.skip(f"needs {', '.join(pins)} from the package index: {got.stderr[-300:]}")
    return folder


def release(version: str) -> tuple[int, ...]:
    """``13`` and ``13.0.0`` alike."""
    parts = [int(x) for x in version.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def parity(folder: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT / "src")])}
    env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "parity", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_the_floors_are_what_runs(oldest: Path) -> None:
    code = "import typer, click, rich, importlib.metadata as m; "
    code += "print(typer.__file__, click.__file__, m.version('typer'), m.version('rich'))"
    env = {**os.environ, "PYTHONPATH": str(oldest)}
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert shown[0].startswith(str(oldest)) and shown[1].startswith(str(oldest))
    wanted = [release(floors()[name]) for name in ("typer", "rich")]
    assert [release(v) for v in shown[2:]] == wanted


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["compare", "--bogus"], "No such option: --bogus"),
        (["compare", "mlp-train", "--size", "huge"], "size 'huge' is unknown"),
        (["compare", "mlp-train", "--steps", "0"], "--steps must be at least 1"),
        (["nope"], "No such command"),
        (["compare", "--price"], "requires an argument"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(oldest: Path, args: list[str], says: str) -> None:
    shown = parity(oldest, *args)
    assert shown.returncode == 2, shown.stderr
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("parity: error:") and says in lines[0]


@pytest.mark.parametrize("args", [[], ["check"]])
def test_a_bare_group_shows_its_help_and_exits_2(oldest: Path, args: list[str]) -> None:
    shown = parity(oldest, *args)
    assert shown.returncode == 2 and shown.stdout.startswith("Usage: parity")
    assert shown.stderr.strip().endswith("needs a command (listed above)")


def test_tables_and_a_verdict_fit_80_columns(oldest: Path, tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "run")
    for args in (["workloads"], ["diff", str(run / "baseline"), str(run / "target")]):
        shown = parity(oldest, *args)
        assert shown.returncode in (0, 1), shown.stderr
        lines = shown.stdout.splitlines()
        assert len(lines) > 5 and max(map(len, lines)) <= 80, args
    assert parity(oldest, "--version").stdout.startswith("parity ")
