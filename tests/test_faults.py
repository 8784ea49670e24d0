"""Fault injection: the parity parent killed with SIGKILL at random points.

Every bundle at its final name must load (complete: ok or failed); partial work lives
only in hidden temporary directories, which no reader treats as a bundle and which
``--resume`` removes; no worker outlives the parent; ``--resume`` finishes the job.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parity.bundle import MANIFEST, load_bundle, load_side
from tests.conftest import run_cli

pytestmark = pytest.mark.slow

KILLS = 4  # timed kills; two more land on events
ARGS = ["mlp-train", "--target", "cpu+bf16", "--steps", "4", "--repeats", "1", "--no-compliance"]


def start(out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "parity", "compare", *ARGS, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )


def check_consistent(out: Path) -> None:
    for manifest in out.rglob(MANIFEST):
        bundle = manifest.parent
        hidden = any(part.startswith(".") for part in bundle.relative_to(out).parts)
        if hidden:
            status = json.loads(manifest.read_text())["status"]
            assert status in ("incomplete", "ok", "failed")  # written atomically, never torn
        else:
            assert load_bundle(bundle).status in ("ok", "failed")
    for name in ("request.json", "verdict.json", "inputs.json"):
        if (out / name).exists():
            json.loads((out / name).read_text())
    for role in ("baseline", "target"):
        if any((out / role).glob("r*/manifest.json")):
            load_side(out / role)  # hidden partial directories are never taken as repeats


def no_orphans(out: Path) -> bool:
    found = subprocess.run(
        ["pgrep", "-f", f"parity.runner.worker {out}"], capture_output=True, text=True
    ).stdout.strip()
    return not found


def side_bundles(out: Path) -> int:
    """How many side repeats (not the reference) sit at their final names."""
    return sum(1 for role in ("baseline", "target") for _ in out.glob(f"{role}/r*/{MANIFEST}"))


def watch(out: Path) -> tuple[float, float, float]:
    """Run one compare to its end: when its directory, its first side repeat, its end came."""
    t0 = time.monotonic()
    proc = start(out)
    seen_dir = seen_bundle = 0.0
    while proc.poll() is None:
        now = time.monotonic() - t0
        if not seen_dir and out.exists():
            seen_dir = now
        if seen_dir and not seen_bundle and side_bundles(out):
            seen_bundle = now
        time.sleep(0.02)
    assert proc.wait() == 0
    end = time.monotonic() - t0
    return seen_dir or end, seen_bundle or end, end


def kill_points(seen_dir: float, end: float) -> list[float | str]:
    """When to kill: seconds after start, or an event ("dir", "bundle") to kill at.

    The timed kills are spread over the span where the run writes (one per stratum, a
    random point in each), measured on a run with the cache as warm as the kills will
    find it; the two event kills land where timing on a busy machine could miss: just
    after the output directory appears (before any side's repeat) and just after the
    first side repeat reaches its final name.
    """
    rng = random.Random(1234)
    width = (end - seen_dir) / KILLS
    timed: list[float | str] = [seen_dir + i * width + rng.uniform(0, width) for i in range(KILLS)]
    return ["dir", *timed, "bundle"]


def kill_at(out: Path, when: float | str) -> bool:
    """Start a compare, kill it at ``when``; False where it finished first."""
    proc = start(out)
    if isinstance(when, float):
        time.sleep(when)
    else:

        def reached() -> bool:
            return out.exists() and (when == "dir" or side_bundles(out) > 0)

        while proc.poll() is None and not reached():
            time.sleep(0.01)
    if proc.poll() is not None:
        return False
    proc.kill()
    proc.wait()
    return True


def test_sigkill_at_random_points_never_corrupts_and_resume_finishes(tmp_path: Path) -> None:
    # the cache warmed as the kills will find it: in this process (the session's kept
    # zygote), since only the calibration's and the kills' commands need processes of their own
    warm = run_cli("compare", *ARGS, "--out", str(tmp_path / "warm-the-cache"))
    assert warm.returncode == 0, warm.stderr
    seen_dir, _, end = watch(tmp_path / "calibrate")
    killed_before = killed_after = 0  # a side repeat at its final name
    for i, when in enumerate(kill_points(seen_dir, end)):
        out = tmp_path / f"k{i:02d}"
        killed = kill_at(out, when)
        time.sleep(0.3)
        assert no_orphans(out), f"kill {i}: a worker outlived the parent"
        if out.exists():
            check_consistent(out)
            killed_before += killed and side_bundles(out) == 0
            killed_after += killed and side_bundles(out) > 0
        if i % 3 == 0 and (out / "request.json").exists():
            res = run_cli("compare", "--resume", str(out), "--json")
            assert res.returncode == 0, res.stderr
            verdict = json.loads(res.stdout)
            assert verdict["speed"]["repeats"] == {"baseline": 1, "target": 1}
            assert not list(out.rglob(".*.tmp-*"))
    # the kills landed at different points of the run: before any side repeat and after one
    assert killed_before > 0 and killed_after > 0, (killed_before, killed_after)
