"""An interrupted comparison says how to continue it: Ctrl-C and SIGTERM alike; and
``--resume`` reads the bundles an older parity wrote (its ``job.json`` in the shape before
a job's plan was one field)."""

from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path

import pytest

from parity.bundle import DIGEST, load_bundle, read_doc, seal, sha256_file
from parity.errors import ResumeError
from parity.measure.resumable import check_resumable, says_how_to_resume
from parity.model.codec import encode
from parity.model.job import JOB_FILE, TimingPlan
from parity.model.manifest import Manifest
from parity.model.spec import parse_side
from parity.request import CompareRequest
from tests.fixtures import runs

SIDES = {"baseline": "cpu", "target": "cpu+bf16"}


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupt_says_resume_and_is_still_an_interrupt(
    how: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with (
        caplog.at_level(logging.WARNING, logger="parity"),
        pytest.raises(KeyboardInterrupt),
        says_how_to_resume(tmp_path),
    ):
        if how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            raise KeyboardInterrupt
    assert f"parity compare --resume {tmp_path} continues it" in caplog.text
    assert signal.getsignal(signal.SIGTERM) == before  # put back as it was


def test_a_comparison_that_ends_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="parity"), says_how_to_resume(tmp_path):
        pass
    assert "--resume" not in caplog.text


def _old_job(path: Path, request: str) -> None:
    """The ``job.json`` a comparison's worker left before the plan was one field (the
    mode and its settings among the job's own), the bundle sealed again."""
    man = read_doc(path / "manifest.json", Manifest)
    job = {
        "role": man.role,
        "side": encode(man.side),
        "workload": {"name": man.workload.description.name},
        "frozen": None,
        "fingerprint": man.workload.fingerprint,
        "parts": encode(man.workload.parts),
        "description": encode(man.workload.description),
        "mode": "measure",
        "repeat": man.repeat,
        "spawned_ns": 0,
        "launch": "fork",
        "timeout_s": 900.0,
        "capture": True,
        "compliance": False,
        "same_input": False,
        "torchrun": {"nnodes": 1, "rdzv_endpoint": None},
        "request": request,
    }
    (path / DIGEST).unlink()
    (path / JOB_FILE).write_text(json.dumps(job, indent=2))
    seal(path)


def test_resume_reads_an_older_parity_s_job_json(tmp_path: Path) -> None:
    out = tmp_path / "c"
    out.mkdir()
    CompareRequest.from_kwargs(
        workload="mlp-train", target=SIDES["target"], repeats=2, compliance=False, out=str(out)
    ).save(out)
    digest = sha256_file(out / "request.json")
    for role, spec in SIDES.items():
        _old_job(runs.write_bundle(out / role / "r00", role=role, spec=spec), digest)
    sides = {role: parse_side(spec) for role, spec in SIDES.items()}
    check_resumable(out, sides)  # each r00 belongs: read, and run for this request.json
    job = load_bundle(out / "target" / "r00").job
    assert job is not None and job.request == digest
    assert job.plan == TimingPlan(capture=True) and job.mode == "measure"
    # a bundle of another request.json is refused as before: its request was read
    _old_job(out / "target" / "r00", "0" * 64)
    with pytest.raises(ResumeError, match=r"another request\.json"):
        check_resumable(out, sides)
