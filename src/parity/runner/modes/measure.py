"""``measure``: the timed run, phases apart.

Timing: every timed region ends with the device's synchronize and is read with
``time.perf_counter_ns``; async devices (CUDA, ``neuron``) return before the work is
done, so a timer without the synchronize would measure dispatch, not work. Phases: start
and import (from the parent's launch), load and move to the device, the first step
(compile or graph capture), warm-up until the step time is steady, and steady state.

After the timed steps and ``runner.finish()``, none of which they touch: FLOPs (counted
once per side, in its first repeat), where a NaN or Inf first appeared (a replay, only
when the run produced one), the numerics probe and its pass on the run's own model after
the run (``job.capture``), and the op scan (single process only: under torchrun its
extra steps would be collective).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

from parity.bundle import METRICS, OPS
from parity.model.job import Mode as ModeName
from parity.model.metrics import DistributedFigures, Flops, Memory, MemoryPhase, Metrics
from parity.model.numerics import NonFiniteOrigin
from parity.probes.flops import count_flops, mfu, peak
from parity.probes.latency import generation_metrics, step_latency
from parity.probes.nonfinite import locate
from parity.probes.numerics import after_run
from parity.probes.scan import scan_after_steps
from parity.probes.timing import StepTimer
from parity.runner import distributed
from parity.runner.documents import (
    Steps,
    emulation,
    numerics_probe,
    write_capture,
    write_outputs,
)
from parity.runner.load import Loaded, load, memory_phase, reset_peaks
from parity.runner.modes.base import Mode
from parity.runner.session import NS, SideSession
from parity.workloads.base import RunNumerics

#: progress events per run
PROGRESS_CHUNKS = 10


@dataclass(kw_only=True)
class Timed:
    """What the timed steps produced."""

    samples_ns: list[int]
    first_step: MemoryPhase
    steps: MemoryPhase
    numerics: RunNumerics
    distributed: DistributedFigures | None = None


class Measure(Mode):
    name: ClassVar[ModeName] = "measure"

    def run(self, session: SideSession) -> None:
        loaded = load(session)
        session.arm_failure_scan(loaded.runner, loaded.model)
        timed = time_steps(session, loaded)
        session.disarm_failure_scan()
        if not session.leader:  # rank 0 writes the bundle
            return
        session.write(METRICS, metrics(session, loaded, timed))
        replay = session.dist is None and not session.job.compliance
        write_outputs(
            session,
            timed.numerics,
            nonfinite=partial(nonfinite, session, loaded) if replay else None,
        )
        if session.job.capture:
            probe(session, loaded)
        if session.dist is None:
            session.enter("scan")
            job = session.job
            census = scan_after_steps(
                loaded.runner,
                loaded.model,
                session.device,
                start=loaded.workload.steps,
                graphs=job.repeat == 0 and not job.compliance,
                environment=session.manifest.environment,
            )
            session.write(OPS, census)
        session.finish()


def nonfinite(session: SideSession, loaded: Loaded) -> NonFiniteOrigin:
    """Where the run's first NaN or Inf appeared (a replay of its steps, after timing)."""
    mode = emulation(session.job.side.emulate)
    return locate(loaded.workload, loaded.fresh_model, loaded.data, loaded.ctx, mode=mode)


def probe(session: SideSession, loaded: Loaded) -> None:
    """The numerics probe on fresh weights, then its forward pass on the run's own model
    with its starting state restored (``capture.json``)."""
    session.enter("numerics probe")
    side = session.job.side
    found, tensors = numerics_probe(
        loaded.workload,
        loaded.fresh_model,
        loaded.full_data,
        loaded.ctx,
        compile_fn=loaded.ctx.compile_fn if side.compile else None,
        emulate=side.emulate,
    )
    if loaded.start is not None and found.available:
        model = loaded.restored_model()
        mode = emulation(side.emulate)
        after, more = after_run(loaded.workload, model, loaded.full_data, loaded.ctx, mode=mode)
        found = replace(found, after_run=after)
        tensors = {**tensors, **more}
    write_capture(session, found, tensors)


def time_steps(session: SideSession, loaded: Loaded) -> Timed:
    """The first step, then the rest in chunks, each step ending with a synchronize."""
    device, runner, steps = session.device, loaded.runner, loaded.workload.steps
    reset_peaks(session)
    # the anti-caching compliance run feeds one identical input at every step
    step = (lambda i: runner.step(0)) if session.job.same_input else runner.step
    timer = StepTimer(step, device.synchronize)
    with session.region():
        session.enter("first step", steps=steps)
        samples = timer.run(0, 1)
        # memory per phase: the first step (compile, graph capture) apart from the rest
        first = memory_phase(session)
        reset_peaks(session)
        session.enter("steps", steps=steps)
        chunk = max(1, steps // PROGRESS_CHUNKS)
        for start in range(1, steps, chunk):
            samples += timer.run(start, min(chunk, steps - start))
            session.progress(len(samples), steps)
        rest = memory_phase(session)
        session.enter("finish", announce=False)
        numerics = runner.finish()
        figures = None
        if session.dist is not None:
            figures = distributed_figures(session, loaded, timer, numerics, samples)
    return Timed(
        samples_ns=samples, first_step=first, steps=rest, numerics=numerics, distributed=figures
    )


def distributed_figures(
    session: SideSession,
    loaded: Loaded,
    timer: StepTimer,
    numerics: RunNumerics,
    samples: list[int],
) -> DistributedFigures:
    """Collective, on every rank: the global loss curve, per-rank step times, and the
    all-reduce share (a few more steps, after timing and numerics)."""
    info, device = session.dist, session.device
    assert info is not None
    numerics.losses = distributed.mean_losses(numerics.losses, info, device)
    share = distributed.allreduce_share(loaded.model, timer.run, start=loaded.workload.steps)
    later = sorted(samples[1:])
    median = later[len(later) // 2] * NS if later else None
    return DistributedFigures(
        rank=info.rank,
        world_size=info.world_size,
        local_rank=info.local_rank,
        backend=info.backend,
        per_rank=distributed.gather_medians(median, device),
        allreduce=share,
    )


def metrics(session: SideSession, loaded: Loaded, timed: Timed) -> Metrics:
    """``metrics.json``: phases, samples, summary, memory, FLOPs and latency figures."""
    workload, job, device = loaded.workload, session.job, session.device
    session.enter("flops", announce=False)
    # the global batch's FLOPs, counted once per side (first repeat): a property of the
    # workload, and counting on meta tensors costs about a second of one-off set-up
    flops = Flops(per_step=None, method="counted in the first repeat")
    if job.repeat == 0 and not job.compliance:
        flops = count_flops(workload, loaded.full_data)
    steps = Steps.of(timed.samples_ns)
    resolved = session.manifest.resolved
    out = steps.metrics(
        phases=steps.phases(startup=session.startup(), load_s=loaded.load_s),
        memory=Memory(load=loaded.memory, first_step=timed.first_step, steps=timed.steps),
        items=resolved.items_per_step if resolved is not None else None,
    )
    steady = slice(steps.steady_from, None)
    token_times = loaded.runner.token_times_ns()
    generation = inference = None
    if token_times is not None:
        generation = generation_metrics(token_times[steady], workload.batch_size)
    elif workload.kind == "infer":
        inference = step_latency(steps.seconds[steady])
    # MFU per device: the step's FLOPs are the global batch's, spread over the ranks
    world = session.dist.world_size if session.dist is not None else 1
    matmul = resolved.matmul if resolved is not None else job.side.precision
    return replace(
        out,
        flops=mfu(flops, steps.median, peak(device.name(), matmul), devices=world),
        generation=generation,
        inference=inference,
        distributed=timed.distributed,
    )
