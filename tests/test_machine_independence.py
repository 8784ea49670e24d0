"""The judge's figures computed as another machine would compute them.

A verdict's floats (sums, medians, logs, RMSEs) differ in their last bits between CPUs
whose numpy takes other SIMD paths (AVX-512 against AVX2 against SSE), whose torch
dispatches to another CPU capability, or that run another number of threads. The golden
files are compared within a stated tolerance (``tests.conftest.GOLDEN_REL``); these tests
run the judge and golden tests again in a fresh interpreter with every SIMD extension
numpy found beyond its baseline switched off (``NPY_DISABLE_CPU_FEATURES``), torch at its
default CPU capability (``ATEN_CPU_CAPABILITY=default``) and one thread, so CI proves on
one machine what another machine would see.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def wider_simd() -> list[str]:
    """The SIMD extensions this numpy found at run time beyond its build's baseline."""
    try:
        from numpy._core import _multiarray_umath as umath  # numpy 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    features: dict[str, bool] = umath.__cpu_features__
    return [f for f in umath.__cpu_dispatch__ if features.get(f)]


WIDER = wider_simd()
NARROW = {
    # (run under these settings already, this numpy finds none: keep them switched off)
    "NPY_DISABLE_CPU_FEATURES": os.environ.get("NPY_DISABLE_CPU_FEATURES") or " ".join(WIDER),
    "ATEN_CPU_CAPABILITY": "default",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
needs_wider_simd = pytest.mark.skipif(
    not WIDER, reason="this CPU has no SIMD extension beyond numpy's baseline to switch off"
)


def run_pytest(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest in one process (``-n 0``): the judge's tests start no workers, and the
    suite's own xdist workers already hold the cores."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **NARROW, **env},
    )


@pytest.mark.slow
def test_the_narrow_settings_take_effect() -> None:
    probe = (
        "import numpy, torch; "
        "from numpy._core import _multiarray_umath as u; "
        "print(sorted(f for f in u.__cpu_dispatch__ if u.__cpu_features__.get(f)), "
        "torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **NARROW},
        check=True,
    ).stdout.split()
    assert out == ["[]", "DEFAULT", "1"]


@pytest.mark.slow
@needs_wider_simd
def test_the_judge_and_golden_tests_pass_with_wider_simd_off() -> None:
    res = run_pytest("tests/judge")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert " passed" in res.stdout and " failed" not in res.stdout


@pytest.mark.slow
@needs_wider_simd
def test_compared_to_the_last_bit_the_golden_files_fail_with_wider_simd_off() -> None:
    """The step has teeth: the exact comparison these tests used before fails there."""
    res = run_pytest("tests/judge/test_golden.py", "-k", "matches_golden", PARITY_GOLDEN_EXACT="1")
    if res.returncode == 0:
        pytest.skip(f"switching off {', '.join(WIDER)} changed no golden figure on this CPU")
    assert res.returncode == 1, res.stdout[-4000:] + res.stderr[-2000:]
    assert " failed" in res.stdout and "!=" in res.stdout
