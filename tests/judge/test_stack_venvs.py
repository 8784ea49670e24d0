"""Issue 18 item 7, done when: two bundles made in virtual environments that differ in one
package's version give a verdict that names that package and both versions.

Two real virtual environments on top of the dev environment (a ``.pth`` line adds its
site-packages after their own), each with a tiny local package installed by pip from a
directory (no network), version 1.0 in one and 1.1 in the other; ``parity run`` in each
makes a bundle, and ``parity diff`` (and the API) judges them."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from parity.api import diff
from tests.conftest import run_cli

PACKAGE = "parity-stackpkg"
PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
"""


def local_package(root: Path, version: str) -> Path:
    src = root / f"pkg-{version}"
    (src / "parity_stackpkg").mkdir(parents=True)
    (src / "parity_stackpkg" / "__init__.py").write_text(f"VERSION = {version!r}\n")
    (src / "pyproject.toml").write_text(PYPROJECT.format(name=PACKAGE, version=version))
    return src


def venv_with(root: Path, version: str) -> Path:
    """A virtual environment that sees the dev environment and has the package at
    ``version`` (its own site-packages come first)."""
    env = root / f"venv-{version}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dev = site.getsitepackages()[0]
    (Path(own) / "parity-dev.pth").write_text(f"import site; site.addsitedir({dev!r})\n")
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    pip += ["--no-deps", "--no-index", "--no-build-isolation", str(local_package(root, version))]
    subprocess.run(pip, check=True, capture_output=True, timeout=120)
    return python


def run_in(python: Path, out: Path) -> subprocess.Popen[str]:
    args = ["-m", "parity", "run", "mlp-train", "--device", "cpu", "--steps", "3"]
    return subprocess.Popen(
        [str(python), *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


@pytest.mark.slow
@pytest.mark.nightly  # builds two venvs
@pytest.mark.timeout(240)
def test_bundles_from_two_venvs_name_the_package_and_both_versions(tmp_path: Path) -> None:
    pythons = [venv_with(tmp_path, "1.0"), venv_with(tmp_path, "1.1")]
    outs = [tmp_path / "a", tmp_path / "b"]
    runs = [run_in(p, o) for p, o in zip(pythons, outs, strict=True)]  # both at once
    for proc in runs:
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr

    verdict = diff(outs[0], outs[1])
    rows = [d for d in verdict.environment_differences if d.package is not None]
    assert [(d.field, d.baseline, d.target) for d in rows] == [
        (f"package {PACKAGE}", f"1.0 (directory file://{tmp_path}/pkg-1.0)",
         f"1.1 (directory file://{tmp_path}/pkg-1.1)"),
    ]  # fmt: skip
    assert rows[0].package is not None and rows[0].package.change == "version"
    assert "pip freeze" not in [d.field for d in verdict.environment_differences]

    # the terminal report names it too, and a pin reports the drift without failing
    res = run_cli(
        "diff", str(outs[0]), str(outs[1]), "--pin", f"{PACKAGE}==1.0", "--wide", "--verbose"
    )
    assert res.returncode == verdict.exit_code, res.stderr
    assert "Packages that differ (1)" in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.strip().startswith(PACKAGE))
    assert "version" in line and "1.0" in line and "1.1" in line
    assert f"{PACKAGE} (pinned ==1.0: target has 1.1)" in res.stdout
