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

KILLS = 6
ARGS = ["mlp-train", "--target", "cpu+bf16", "--steps", "4", "--repeats", "1", "--no-compliance"]


def start(out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "parity", "compare", *ARGS, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )


def check_consistent(out: Path) -> dict[str, int]:
    counts = {"bundles": 0, "partial": 0}
    for manifest in out.rglob(MANIFEST):
        bundle = manifest.parent
        hidden = any(part.startswith(".") for part in bundle.relative_to(out).parts)
        if hidden:
            counts["partial"] += 1
            status = json.loads(manifest.read_text())["status"]
            assert status in ("incomplete", "ok", "failed")  # written atomically, never torn
        else:
            assert load_bundle(bundle).status in ("ok", "failed")
            counts["bundles"] += 1
    for name in ("request.json", "verdict.json", "inputs.json"):
        if (out / name).exists():
            json.loads((out / name).read_text())
    for role in ("baseline", "target"):
        if any((out / role).glob("r*/manifest.json")):
            load_side(out / role)  # hidden partial directories are never taken as repeats
    return counts


def no_orphans(out: Path) -> bool:
    found = subprocess.run(
        ["pgrep", "-f", f"parity.runner.worker {out}"], capture_output=True, text=True
    ).stdout.strip()
    return not found


def test_sigkill_at_random_points_never_corrupts_and_resume_finishes(tmp_path: Path) -> None:
    t0 = time.monotonic()
    full = start(tmp_path / "calibrate")
    assert full.wait(timeout=300) == 0
    duration = time.monotonic() - t0
    rng = random.Random(1234)
    totals = {"bundles": 0, "partial": 0}
    for i in range(KILLS):
        out = tmp_path / f"k{i:02d}"
        proc = start(out)
        time.sleep(rng.uniform(0.2, 0.9 * duration))
        proc.kill()
        proc.wait()
        time.sleep(0.3)
        assert no_orphans(out), f"kill {i}: a worker outlived the parent"
        if out.exists():
            counts = check_consistent(out)
            totals = {k: totals[k] + counts[k] for k in totals}
        if i % 3 == 0 and (out / "request.json").exists():
            res = run_cli("compare", "--resume", str(out), "--json")
            assert res.returncode == 0, res.stderr
            verdict = json.loads(res.stdout)
            assert verdict["speed"]["repeats"] == {"baseline": 1, "target": 1}
            assert not list(out.rglob(".*.tmp-*"))
    assert totals["bundles"] > 0  # the kills landed at different points of the run
