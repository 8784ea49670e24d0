"""A full disk and other I/O errors while a bundle is written: the side ends as failed
with its reason kept (an ``OutputError``, and a failed manifest in the hidden partial
bundle where space allows), nothing under the bundle's final name, no traceback in the
parent; ``--resume`` runs it again. Faults are injected in the parent (a patched rename
or write) and in the worker (``PARITY_TEST_FAULTS``); a small tmpfs does it for real
where user namespaces allow mounting one.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import parity.bundle
from parity import api
from parity.api import ComparisonResult
from parity.bundle import (
    DIGEST,
    MANIFEST,
    Digest,
    load_bundle,
    load_side,
    read_doc,
    seal,
    write_json,
)
from parity.errors import OutputError
from parity.model.manifest import Manifest
from parity.plugins import WORKER_HOOKS_VAR
from parity.request import CompareRequest
from parity.runner.failure import TAIL_BYTES
from parity.safety.logfile import LOG_LIMIT
from parity.testing.faults import ENV_VAR, disk_full, environ
from tests.conftest import FIXTURES
from tests.fixtures.jobs import run, workload_job

FAULTY = f"{FIXTURES / 'workloads.py'}"


def _hidden(parent: Path) -> list[Path]:
    return [p for p in parent.iterdir() if p.name.startswith(".") and ".tmp-" in p.name]


def test_a_write_that_fails_is_an_output_error_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(src: object, dst: object) -> None:
        raise disk_full(Path(str(dst)))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OutputError) as failed:
        write_json(tmp_path / "verdict.json", {"a": 1})
    message = str(failed.value)
    assert message.startswith(f"could not write {tmp_path / 'verdict.json'}: no space left")
    assert "(ENOSPC)" in message and "--resume" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []


def test_sealing_drops_what_a_writer_left_half_done(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    (tmp_path / ".metrics.json.0123.tmp").write_text("{")
    (tmp_path / ".stdout.log.redact").write_text("half")
    seal(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [DIGEST, "manifest.json"]
    assert read_doc(tmp_path / DIGEST, Digest).files.keys() == {"manifest.json"}


def _failed_partial(parent: Path, name: str) -> Manifest:
    """The failed manifest in the one hidden partial bundle beside where ``name`` would be."""
    assert not (parent / name).exists()
    (partial,) = _hidden(parent)
    assert partial.name.startswith(f".{name}.tmp-")
    manifest = read_doc(partial / MANIFEST, Manifest)
    assert manifest.status == "failed" and not (partial / "metrics.json").exists()
    return manifest


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("metrics.json", "metrics.json: no space left on device (ENOSPC)"),
        ("numerics.safetensors", "numerics.safetensors: no space left on device (ENOSPC)"),
        ("*", "could not write its bundle in phase 'setup': no space left on device (ENOSPC)"),
    ],
)
def test_a_worker_whose_writes_fail_leaves_no_bundle_and_says_why(
    tmp_path: Path, fault: str, words: str
) -> None:
    job = workload_job("mlp-train", "cpu")
    with pytest.raises(OutputError) as failed:
        run(job, tmp_path, "b", env=environ(fault))  # forked, as a comparison's workers
    assert words in str(failed.value) and "\n" not in str(failed.value)
    manifest = _failed_partial(tmp_path, "b")
    assert words in (manifest.reason or "")


@pytest.mark.slow
def test_the_parent_s_own_failing_rename_leaves_no_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.replace
    final = tmp_path / "b"

    def rename(src: object, dst: object) -> None:
        if Path(str(dst)) == final:
            raise OSError(errno.EIO, "Input/output error")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(parity.bundle.os, "replace", rename)
    with pytest.raises(OutputError, match=r"input/output error \(EIO\)"):
        run(workload_job("mlp-train", "cpu"), tmp_path, final.name)
    _failed_partial(tmp_path, "b")


@pytest.mark.slow
def test_a_flood_of_output_is_kept_short_and_never_crashes_the_parent(tmp_path: Path) -> None:
    bundle = run(workload_job(f"{FAULTY}:LoudOnReduced", "cpu+bf16"), tmp_path)
    assert bundle.status == "failed"
    assert (bundle.manifest.reason or "").endswith("planted failure after a flood of output")
    tail = bundle.manifest.stderr_tail or ""
    assert tail.endswith("the last words") and len(tail) < TAIL_BYTES // 8
    stdout = bundle.path / "stdout.log"
    assert LOG_LIMIT - 2048 < stdout.stat().st_size < LOG_LIMIT + 300  # 8 MiB: head and tail
    kept = stdout.read_text()
    assert kept.startswith("x" * 1023 + "\n")  # the head is kept
    assert " bytes of this log were left out here (bytes 1048576 to " in kept
    assert bundle.logs is not None and [c.name for c in bundle.logs.cut] == ["stdout.log"]
    assert bundle.logs.cut[0].written >= 12 << 20 and bundle.logs.cut[0].dropped >= 4 << 20


def _compare(out: Path) -> ComparisonResult:
    options = dict(
        workload="mlp-train", target="cpu+bf16", steps=4, repeats=1, compliance=False, out=str(out)
    )
    return api.compare(CompareRequest.from_kwargs(**options))


@pytest.mark.slow
def test_a_side_that_cannot_be_written_stops_the_comparison_and_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "c"
    for name, value in environ("ops.json").items():
        monkeypatch.setenv(name, value)  # a first repeat's op scan (the reference has none)
    with pytest.raises(OutputError) as failed:
        _compare(out)
    assert str(failed.value).startswith("baseline r00: the worker could not write its bundle")
    assert load_bundle(out / "reference").ok  # what was written before is complete
    assert not (out / "baseline" / "r00").exists() and len(_hidden(out / "baseline")) == 1
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.delenv(WORKER_HOOKS_VAR)
    result = api.resume(out)
    assert result.verdict.passed
    assert not _hidden(out / "baseline") and load_side(out / "baseline").repeats[0].ok


UNSHARE = shutil.which("unshare")
SMALL_DISK = """
import json, subprocess, sys
from pathlib import Path
from parity import api
from parity.bundle import load_bundle
from parity.errors import OutputError
from parity.request import CompareRequest

disk, out = Path(sys.argv[1]), Path(sys.argv[1]) / "c"
options = dict(
    workload="mlp-train", target="cpu+bf16", steps=4, repeats=1, compliance=False, out=str(out)
)
seen = {}
try:
    api.compare(CompareRequest.from_kwargs(**options))
except OutputError as exc:
    seen["error"] = str(exc)
seen["final"] = sorted(str(m.parent.relative_to(out)) for m in out.rglob("manifest.json")
                       if not any(p.startswith(".") for p in m.relative_to(out).parts))
for name in seen["final"]:
    load_bundle(out / name)  # each bundle under its final name is complete
subprocess.run(["mount", "-o", "remount,size=64m", "tmpfs", str(disk)], check=True)
seen["passed"] = api.resume(out).verdict.passed
seen["hidden"] = [str(p) for p in out.rglob(".*")]
print(json.dumps(seen))
"""


@pytest.mark.slow
@pytest.mark.skipif(UNSHARE is None, reason="needs unshare(1) for a private tmpfs")
def test_a_full_tmpfs_leaves_only_complete_bundles_and_resume_finishes(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    script = tmp_path / "small_disk.py"
    script.write_text(SMALL_DISK)
    mount = f'mount -t tmpfs -o size=160k tmpfs "{disk}"'
    probe = subprocess.run([str(UNSHARE), "-Urm", "sh", "-c", mount], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {probe.stderr!r}")
    command = f'{mount} && exec "$0" "$1" "$2"'
    done = subprocess.run(
        [str(UNSHARE), "-Urm", "sh", "-c", command, sys.executable, str(script), str(disk)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "no space left on device (ENOSPC)" in seen["error"], seen
    assert "\n" not in seen["error"] and "baseline r00" not in seen["final"], seen
    assert seen["passed"] is True and seen["hidden"] == [], seen
