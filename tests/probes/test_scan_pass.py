"""The scan pass in-process (parity.probes.scan), on the CPU: cheap and deterministic."""

from __future__ import annotations

import torch

from parity.devices import get_device
from parity.model.codec import decode, dumps, loads
from parity.model.ops import OpsCensus, PlainRun, Versions
from parity.model.spec import WorkloadSpec, parse_side
from parity.probes.scan import failure_scan, scan, scan_after_steps
from parity.workloads.base import RunContext, StepRunner
from tests.fixtures.bundles import environment
from tests.fixtures.scan_workloads import Planted, planted_line

ENV = environment()


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
    assert ops.steps_scanned == 2 and ops.scan_error is None
    assert ops.unsupported == () and ops.clean
    assert ops.host_syncs == ()  # on the CPU, .item() waits for nothing
    assert [c.op for c in ops.custom_ops] == ["parity_test::scale"]
    assert ops.custom_ops[0].test_first is True
    assert ops.summary is not None and ops.summary.graph_breaks == 1
    assert ops.graphs is not None and ops.graphs.explain is not None
    where = ops.graphs.explain.reasons[0].where
    assert where is not None and where.endswith(f"scan_workloads.py:{planted_line('graph break')}")
    assert ops.plain_run == PlainRun(ran=True, failed=False, error=None)
    assert ops.versions == Versions(python="3.11.7", torch="2.13.0", backend_packages={})
    # step 0 creates the optimizer state, step 1 does not
    calls = ops.summary.op_calls_per_step
    assert len(calls) == 2 and calls[0] > calls[1]
    assert decode(OpsCensus, loads(dumps(ops))) == ops  # ops.json round-trips strictly


def test_after_steps_the_scan_skips_probes_on_later_repeats() -> None:
    runner, model = _runner()
    ops = scan_after_steps(runner, model, get_device("cpu"), start=3, graphs=False)
    assert ops.first_step == 3
    assert ops.plain_run is not None and ops.plain_run.note == "the timed steps"
    assert ops.graphs is not None and ops.graphs.skipped is not None


def test_a_failure_scan_lists_what_the_failed_steps_ran() -> None:
    runner, model = _runner()
    cpu = get_device("cpu")
    assert failure_scan(KeyboardInterrupt(), runner, model, cpu) is None  # only for exceptions
    oom = RuntimeError("CUDA out of memory")
    assert failure_scan(oom, runner, model, cpu) is None  # would only repeat it
    ops = failure_scan(NotImplementedError("aten::foo is not supported"), runner, model, cpu)
    assert ops is not None and ops.after_failure and ops.first_step == 0
    assert ops.plain_run is not None and ops.plain_run.failed
    assert ops.plain_run.error is not None and ops.plain_run.error.type == "NotImplementedError"


def test_a_scan_that_raises_reports_its_own_failure() -> None:
    class Broken(StepRunner):
        def step(self, i: int) -> None:
            raise ValueError("the workload's own bug")

        def finish(self) -> None:  # type: ignore[override]
            raise AssertionError("not called")

    ops = scan_after_steps(Broken(), torch.nn.Linear(2, 2), get_device("cpu"), start=0)
    assert ops.scan_error is not None and ops.scan_error.type == "ValueError"
    assert not ops.clean and ops.steps_scanned == 0
