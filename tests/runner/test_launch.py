"""The launcher: the command from a typed job, events tailed as typed ``Event``s, and a
failed side that still ends as a typed bundle (an exception, a signal, a timeout)."""

from __future__ import annotations

import signal
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from parity.bundle import OPS, load_bundle
from parity.model.job import Event, Torchrun
from parity.model.manifest import Manifest
from parity.model.spec import parse_side
from parity.runner.failure import failed_manifest, torchrun_root_cause
from parity.runner.launch import EventTail, command, run_job
from parity.runner.python import BOOT
from parity.testing.pace import patience
from tests.conftest import FIXTURES
from tests.fixtures.bundles import manifest
from tests.fixtures.jobs import run, script_job, workload_job

FAULTY = f"{FIXTURES / 'workloads.py'}"


def _job(side: str, **changes: object) -> object:
    job = script_job(FIXTURES / "train_script.py", side="cpu")
    return replace(job, side=parse_side(side), **changes)


def test_plain_side_is_one_interpreter() -> None:
    cmd = command(_job("cpu"), Path("/t"))  # type: ignore[arg-type]
    assert cmd[:4] == [sys.executable, "-X", "faulthandler", "-c"]
    assert cmd[-2:] == ["parity.runner.worker", "/t"]
    assert "torch.distributed.run" not in cmd and "-m" not in cmd


def test_nproc_runs_under_torchrun_standalone() -> None:
    cmd = command(_job("cpu+nproc=4"), Path("/t"))  # type: ignore[arg-type]
    assert "torch.distributed.run" in cmd and "--nproc-per-node=4" in cmd
    assert "--standalone" in cmd and "--max-restarts=0" in cmd and "--no-python" in cmd
    worker = [sys.executable, "-X", "faulthandler", "-c", BOOT, "parity.runner.worker", "/t"]
    assert cmd[-len(worker) :] == worker


def test_multi_node_passes_the_rendezvous_through() -> None:
    torchrun = Torchrun(nnodes=2, rdzv_endpoint="h:29500")
    cmd = command(_job("cuda+nproc=8", torchrun=torchrun), Path("/t"))  # type: ignore[arg-type]
    assert "--nnodes=2" in cmd and "--rdzv-endpoint=h:29500" in cmd
    assert "--standalone" not in cmd


def test_torchrun_root_cause_names_the_rank() -> None:
    text = """Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_03:46:45
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 2822)
"""
    assert torchrun_root_cause(text) == (
        "rank 1 killed by SIGKILL; torchrun stopped the other ranks"
    )
    assert torchrun_root_cause("nothing here") is None


#: torchrun's summary when rank 1 was killed and rank 0 crashed in its collective first
LOST_PEER = """Failures:
[1]:
  time      : 2026-12-02_06:31:02
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 10265)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 10265
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-02_06:31:02
  rank      : 0 (local_rank: 0)
  exitcode  : -11 (pid: 10264)
  error_file: <N/A>
  traceback : Signal 11 (SIGSEGV) received by PID 10264
"""
GLOO = "RuntimeError in phase 'steps': [gloo] Connection closed by peer [127.0.0.1]:4242"


def test_a_rank_that_lost_its_peer_is_named_after_the_rank_that_was_killed() -> None:
    assert torchrun_root_cause(LOST_PEER, GLOO) == (
        "rank 1 killed by SIGKILL; rank 0 then killed by SIGSEGV on losing its peer; "
        "torchrun stopped the other ranks"
    )
    # without an error that says so, torchrun's own first observation stands
    assert torchrun_root_cause(LOST_PEER, "ValueError in phase 'steps': bad batch") == (
        "rank 0 killed by SIGSEGV; torchrun stopped the other ranks"
    )
    assert torchrun_root_cause(LOST_PEER) == (
        "rank 0 killed by SIGSEGV; torchrun stopped the other ranks"
    )
    stopped = LOST_PEER.replace("exitcode  : -9", "exitcode  : -15")  # torchrun's SIGTERM
    assert torchrun_root_cause(stopped, GLOO) == (
        "rank 0 killed by SIGSEGV; torchrun stopped the other ranks"
    )


def test_events_are_tailed_as_typed_events_and_odd_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    tail = EventTail(path)
    assert tail.poll() == []  # no file yet
    path.write_text(
        '{"t_ns": 1, "event": "phase", "phase": "load"}\n'
        "not json\n"
        '{"t_ns": 2, "event": "unknown"}\n'
        '{"t_ns": 3, "event": "progress", "done": 2, "steps": 6}\n'
        '{"t_ns": 4, "event": "phase", "pha'  # torn: the worker is still writing it
    )
    assert tail.poll() == [
        Event(t_ns=1, event="phase", phase="load"),
        Event(t_ns=3, event="progress", done=2, steps=6),
    ]
    with path.open("a") as f:
        f.write('se": "steps"}\n')
    assert tail.poll() == [Event(t_ns=4, event="phase", phase="steps")]


def test_a_failed_manifest_keeps_what_the_worker_wrote() -> None:
    job = workload_job()
    written = manifest(role="run", spec="cpu", status="incomplete")
    failed = failed_manifest(job, "it broke", "Traceback ...", written)
    assert failed.status == "failed" and failed.reason == "it broke"
    assert failed.stderr_tail == "Traceback ..."
    assert failed.environment == written.environment and failed.resolved == written.resolved
    # nothing readable written: the job says what ran
    bare = failed_manifest(job, "it broke", "", None)
    assert isinstance(bare, Manifest) and bare.environment is None
    assert bare.workload.fingerprint == job.fingerprint and bare.side == job.side
    assert bare.workload.parts.digest() == bare.workload.fingerprint


@pytest.mark.slow
def test_a_worker_that_raises_leaves_a_failed_bundle_with_its_error(tmp_path: Path) -> None:
    job = workload_job(f"{FAULTY}:RaiseOnReduced", "cpu+bf16")
    events: list[Event] = []
    # spawned: a forked worker's failures are the end-to-end tests' (tests/test_cli_e2e.py)
    bundle = run(job, tmp_path, spawn=True, on_event=events.append)
    assert bundle.status == "failed" and bundle.metrics is None and bundle.outputs is None
    reason = bundle.manifest.reason or ""
    # the failing line itself, not an outer frame
    lines = Path(FAULTY).read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "planted failure on the target" in t)
    assert reason.startswith("RuntimeError in phase 'steps' (at ")
    assert f"workloads.py:{line})" in reason
    assert reason.endswith("): planted failure on the target")
    # the worker's own manifest is kept: environment and resolved settings
    assert bundle.manifest.environment is not None and bundle.manifest.resolved is not None
    assert bundle.manifest.resolved.precision == "bf16"
    assert "planted failure" in (bundle.manifest.stderr_tail or "") or (
        "planted failure" in (bundle.path / "error.json").read_text()
    )
    assert [e.phase for e in events if e.event == "phase"][:3] == ["setup", "load", "first step"]
    # the failure scan ran the same steps from step 0 and says so
    assert (bundle.path / OPS).is_file() and bundle.ops is not None
    assert bundle.ops.after_failure and bundle.ops.plain_run is not None
    assert bundle.ops.plain_run.error is not None
    assert bundle.ops.plain_run.error.message == "planted failure on the target"


@pytest.mark.slow
def test_a_worker_killed_by_a_signal_is_recorded_with_it(tmp_path: Path) -> None:
    job = workload_job(f"{FAULTY}:AbortOnReduced", "cpu+bf16")
    bundle = run(job, tmp_path, spawn=True)  # as above
    assert bundle.status == "failed"
    assert bundle.manifest.reason == (
        f"the worker was killed by {signal.SIGABRT.name} in phase 'steps'"
    )
    assert not (bundle.path / "error.json").exists()


@pytest.mark.slow
def test_a_worker_past_its_timeout_is_stopped(tmp_path: Path) -> None:
    # 12 s on an idle machine, stretched by the load: a busy one may not reach the steps
    timeout = float(round(patience(12.0)))
    job = workload_job(f"{FAULTY}:HangOnReduced", "cpu+bf16", timeout_s=timeout)
    events: list[Event] = []
    final = run_job(job, tmp_path / "hang", on_event=events.append).path
    phases = [e.phase for e in events if e.event == "phase"]
    bundle = load_bundle(final)
    assert bundle.status == "failed"
    reason = bundle.manifest.reason or ""
    # the reason names the last phase the worker announced ("steps" unless the machine
    # is so busy that it did not get there in time)
    assert reason.startswith(f"timed out after {timeout:g} s in phase "), reason
    if phases:
        assert f"in phase '{phases[-1]}'" in reason, (reason, phases)
    assert not list(tmp_path.glob(".hang.tmp-*"))  # the bundle is in place, complete
