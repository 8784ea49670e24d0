"""The whole-run CPU references: ``reference`` (fp64) and ``expected`` (the target's
precision).

``reference`` runs the workload's full steps on the CPU with the model and float data in
float64: the loss of every step, what ``finish()`` returns (evaluation outputs after
training, inference outputs, generated tokens), then the numerics probe in float64. It
is the fp64 trajectory every side is gated against. Where the steps leave what
``finish()`` returns unchanged (inference, generation: ``StepRunner.reference_steps``),
it runs one step: the outputs are the same, and a large model's float64 steps cost
minutes each.

``expected`` runs the same in float32 under the job's precision (``cpu+bf16`` autocast,
``cpu+fp16``, or an ``+emulate`` profile): the error the target's precision alone makes,
step by step and module by module, measured on the CPU. A bf16 target is judged against
this, not against an fp32 baseline's far smaller error.

Both bundles hold ``metrics.json`` (their step times and memory peaks, the reference's
cost), ``numerics.json`` and ``capture.json``. Neither is timed against anything.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch import nn

from parity.bundle import METRICS
from parity.model.job import Mode as ModeName
from parity.model.metrics import Memory
from parity.probes import memory
from parity.runner.documents import (
    Steps,
    emulation,
    numerics_probe,
    write_capture,
    write_outputs,
)
from parity.runner.load import frozen_inputs, load_model, memory_phase, reset_peaks
from parity.runner.modes.base import Mode
from parity.runner.modes.measure import PROGRESS_CHUNKS
from parity.runner.session import NS, SideSession
from parity.workloads.base import RunContext

Tensors = dict[str, torch.Tensor]


class WholeRun(Mode):
    """The workload's full steps on the CPU, then the probe (see the module's docstring)."""

    join_group: ClassVar[bool] = False
    #: the float dtype of the model and data (None: as frozen, float32)
    dtype: ClassVar[torch.dtype | None] = None

    def cast(self, t: Tensors) -> Tensors:
        dtype = self.dtype
        if dtype is None:
            return t
        return {k: v.to(dtype) if v.is_floating_point() else v for k, v in t.items()}

    def run(self, session: SideSession) -> None:
        session.enter(self.name)
        workload = session.require_workload()
        side = session.job.side
        memory.reset_host_peak()
        t0 = time.perf_counter_ns()
        weights, frozen_data = frozen_inputs(session)
        data = self.cast(frozen_data)

        def fresh() -> nn.Module:
            model = load_model(workload, weights)
            return model.to(self.dtype) if self.dtype is not None else model

        ctx = RunContext(device=torch.device("cpu"), side=side, autocast_type="cpu")
        runner = workload.make_runner(fresh(), data, ctx)
        load_s = (time.perf_counter_ns() - t0) * NS
        load_memory = memory_phase(session)
        reset_peaks(session)
        mode = emulation(side.emulate)
        count = runner.reference_steps(workload.steps)
        session.enter("steps", steps=count)
        samples = _steps(session, runner.step, count, mode)
        with mode():
            numerics = runner.finish()
        steps = Steps.of(samples)
        resolved = session.manifest.resolved
        session.write(
            METRICS,
            steps.metrics(
                phases=steps.phases(startup=session.startup(), load_s=load_s),
                memory=Memory(load=load_memory, steps=memory_phase(session)),
                items=resolved.items_per_step if resolved is not None else None,
            ),
        )
        write_outputs(session, numerics)
        session.enter("numerics probe")
        probe, tensors = numerics_probe(workload, fresh, data, ctx, emulate=side.emulate)
        write_capture(session, probe, tensors)
        session.finish()


def _steps(
    session: SideSession,
    step: Callable[[int], None],
    count: int,
    mode: Callable[[], contextlib.AbstractContextManager[Any]],
) -> list[int]:
    """Each step's duration (ns); on the CPU, so nothing to synchronise."""
    samples = []
    chunk = max(1, count // PROGRESS_CHUNKS)
    for i in range(count):
        t = time.perf_counter_ns()
        with mode():
            step(i)
        samples.append(time.perf_counter_ns() - t)
        if (i + 1) % chunk == 0 or i + 1 == count:
            session.progress(i + 1, count)
    return samples


class Reference(WholeRun):
    name: ClassVar[ModeName] = "reference"
    dtype: ClassVar[torch.dtype | None] = torch.float64


class Expected(WholeRun):
    name: ClassVar[ModeName] = "expected"
