"""The scan pass in-process (parity.probes.scan), on the CPU: cheap and deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from parity.devices import get_device
from parity.probes.scan import (
    arm_failure_scan,
    disarm_failure_scan,
    failure_scan,
    scan,
    scan_after_steps,
)
from parity.spec import WorkloadSpec, parse_side
from parity.workloads.base import RunContext, StepRunner
from tests.fixtures.scan_workloads import Planted, planted_line

ENV = {"python": "3.11.7", "torch": {"version": "2.13.0"}, "device": {"backend_packages": {}}}


def _runner() -> tuple[StepRunner, torch.nn.Module]:
    w = Planted(WorkloadSpec(name="planted", steps=3))
    torch.manual_seed(0)
    model = w.build_model()
    device = get_device("cpu")
    ctx = RunContext(device=device.torch_device, side=parse_side("cpu"), autocast_type="cpu")
    return w.make_runner(model, w.make_data(), ctx), model


def test_scan_on_the_cpu_reports_the_forward_findings() -> None:
    runner, model = _runner()
    ops = scan(runner, model, get_device("cpu"), environment=ENV)
    assert ops["steps_scanned"] == 2 and ops["scan_error"] is None
    assert ops["unsupported"] == [] and ops["clean"]
    assert ops["host_syncs"] == []  # on the CPU, .item() waits for nothing
    assert [c["op"] for c in ops["custom_ops"]] == ["parity_test::scale"]
    assert ops["summary"]["graph_breaks"] == 1
    assert ops["graphs"]["explain"]["reasons"][0]["where"].endswith(
        f"scan_workloads.py:{planted_line('graph break')}"
    )
    assert ops["plain_run"] == {"ran": True, "failed": False, "error": None}
    assert ops["versions"] == {"python": "3.11.7", "torch": "2.13.0", "backend_packages": {}}
    # step 0 creates the optimizer state, step 1 does not
    calls = ops["summary"]["op_calls_per_step"]
    assert len(calls) == 2 and calls[0] > calls[1]
    json.dumps(ops, allow_nan=False)  # ops.json is plain JSON


def test_after_steps_the_scan_skips_probes_on_later_repeats(tmp_path: Path) -> None:
    runner, model = _runner()
    scan_after_steps(
        tmp_path, runner, model, get_device("cpu"), {"environment": ENV}, start=3, graphs=False
    )
    ops = json.loads((tmp_path / "ops.json").read_text())
    assert ops["first_step"] == 3
    assert ops["plain_run"]["note"] == "the timed steps"
    assert "skipped" in ops["graphs"]


def test_a_failure_scan_runs_once_when_armed(tmp_path: Path) -> None:
    runner, model = _runner()
    assert not failure_scan(RuntimeError("x"))  # not armed
    arm_failure_scan(tmp_path, runner, model, get_device("cpu"), {}, timeout_s=600)
    assert not failure_scan(KeyboardInterrupt())  # only for exceptions
    assert not failure_scan(RuntimeError("CUDA out of memory"))  # would only repeat it
    arm_failure_scan(tmp_path, runner, model, get_device("cpu"), {}, timeout_s=600)
    assert failure_scan(NotImplementedError("aten::foo is not supported"))
    ops = json.loads((tmp_path / "ops.json").read_text())
    assert ops["after_failure"] and ops["plain_run"]["failed"]
    assert ops["plain_run"]["error"]["type"] == "NotImplementedError"
    assert not failure_scan(RuntimeError("again"))  # disarmed after one
    arm_failure_scan(tmp_path, runner, model, get_device("cpu"), {}, timeout_s=600)
    disarm_failure_scan()
    assert not failure_scan(RuntimeError("x"))
