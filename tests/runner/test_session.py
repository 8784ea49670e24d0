"""The side session in-process (no worker process): settings resolved and recorded,
the manifest from incomplete to ok, events, the region's records, the failure scan."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from parity.bundle import MANIFEST, OPS, read_doc
from parity.devices import get_device
from parity.model.codec import decode, loads
from parity.model.job import Event, ReferencePlan
from parity.model.manifest import Items, Manifest
from parity.model.ops import OpsCensus
from parity.model.spec import WorkloadSpec, parse_side
from parity.runner.session import SideSession, apply_settings
from parity.workloads import resolve
from tests.fixtures.jobs import workload_job


@pytest.fixture
def restore_torch() -> Iterator[None]:
    """Process-wide settings a session changes, put back for the other tests."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    yield
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic)


def test_settings_are_applied_and_resolved(restore_torch: None) -> None:
    workload = resolve(WorkloadSpec(name="gpt-train", steps=5))
    side = parse_side("cpu+bf16+compile+threads=1+deterministic+emulate=matmul-tf32")
    resolved = apply_settings(side, get_device("cpu"), workload)
    assert torch.get_num_threads() == 1 and resolved.threads == 1
    assert resolved.deterministic and torch.is_deterministic_algorithms_warn_only_enabled()
    assert resolved.precision == "bf16" and resolved.autocast_dtype == "bfloat16"
    assert resolved.autocast_device_type == "cpu"
    assert resolved.matmul == "bf16" and resolved.conv == "bf16"
    # +compile without a backend: the adapter's default is what ran, and is recorded
    assert resolved.compile_backend == "inductor"
    assert resolved.emulate == "matmul-tf32" and resolved.steps == 5
    assert resolved.items_per_step == Items(samples=8, tokens=8 * 64)


def test_fp32_resolves_no_autocast_and_the_named_backend(restore_torch: None) -> None:
    resolved = apply_settings(parse_side("cpu+compile=eager"), get_device("cpu"), None)
    assert resolved.autocast_device_type is None and resolved.autocast_dtype is None
    assert resolved.matmul == "fp32" and resolved.compile_backend == "eager"
    assert resolved.steps is None and resolved.items_per_step is None
    assert apply_settings(parse_side("cpu"), get_device("cpu"), None).compile_backend is None


def _events(path: Path) -> list[Event]:
    return [decode(Event, loads(line)) for line in path.read_text().splitlines()]


def test_the_manifest_goes_from_incomplete_to_ok(tmp_path: Path, restore_torch: None) -> None:
    job = workload_job("mlp-train", "cpu+deterministic+emulate=matmul-bf16", ReferencePlan())
    session = SideSession(job, tmp_path, started_ns=time.perf_counter_ns())
    session.setup(join_group=False)
    ready = session.startup()
    assert ready[0] is None and ready[1] > 0  # no launch time in the job: not made up
    time.sleep(0.01)
    assert session.startup() == ready  # start-up ends with set-up, however long the run
    first = read_doc(tmp_path / MANIFEST, Manifest)
    assert first.status == "incomplete" and first.mode == "reference"
    assert first.environment is not None and first.resolved is not None
    assert first.resolved.nondeterministic_ops is None and first.resolved.emulated_calls is None
    assert first.workload.fingerprint == job.fingerprint and first.side == job.side
    with session.region():
        torch.randn(4, 4) @ torch.randn(4, 4)
        torch.randn(8).kthvalue(2)  # no deterministic kernel: recorded, not raised
    session.finish()
    session.teardown()
    done = read_doc(tmp_path / MANIFEST, Manifest)
    assert done.ok and done.finished_unix is not None and done.resolved is not None
    assert done.resolved.emulated_calls == 1
    assert done.resolved.nondeterministic_ops is not None
    phases = [e.phase for e in _events(tmp_path / "events.jsonl") if e.event == "phase"]
    assert phases == ["setup", "done"]


def test_a_session_before_setup_says_so(tmp_path: Path) -> None:
    session = SideSession(workload_job(), tmp_path, started_ns=0)
    assert session.phase == "import"
    with pytest.raises(RuntimeError, match="not set up yet"):
        _ = session.device


def test_the_failure_scan_runs_once_when_armed(tmp_path: Path) -> None:
    from tests.probes.test_scan_pass import _runner

    session = SideSession(workload_job(), tmp_path, started_ns=0)
    session.setup(join_group=False)
    runner, model = _runner()
    assert not session.scan_after_failure(RuntimeError("x"))  # not armed
    session.arm_failure_scan(runner, model)
    session.disarm_failure_scan()
    assert not session.scan_after_failure(RuntimeError("x"))  # disarmed
    session.arm_failure_scan(runner, model)
    assert session.scan_after_failure(NotImplementedError("aten::foo is not supported"))
    census = decode(OpsCensus, json.loads((tmp_path / OPS).read_text()))
    assert census.after_failure and census.plain_run is not None and census.plain_run.failed
    assert not session.scan_after_failure(RuntimeError("again"))  # once only


def test_no_failure_scan_past_a_third_of_the_timeout(tmp_path: Path) -> None:
    from tests.probes.test_scan_pass import _runner

    session = SideSession(workload_job(timeout_s=0.001), tmp_path, started_ns=0)
    session.setup(join_group=False)
    runner, model = _runner()
    session.arm_failure_scan(runner, model)
    time.sleep(0.01)  # a third of the timeout has passed
    assert not session.scan_after_failure(RuntimeError("x"))
    assert not (tmp_path / OPS).exists()
