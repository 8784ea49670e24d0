"""``measure``: the timed run, phases apart.

Timing: every timed region ends with the device's synchronize and is read with
``time.perf_counter_ns``; async devices (CUDA, ``neuron``) return before the work is
done, so a timer without the synchronize would measure dispatch, not work. Phases: start
and import (from the parent's launch), load and move to the device, the first step
(compile or graph capture), warm-up until the step time is steady, and steady state.

A workload with a loader (``Workload.make_loader``) is timed by
``parity.probes.pipeline.PipelineTimer``: the wait for each batch, its copy to the device
and the step apart, then, after ``runner.finish()``, a short pass over a few of the same
batches already on the device (``metrics.json``'s ``input_pipeline``).

After the timed steps and ``runner.finish()``, none of which they touch: FLOPs (counted
once per side, in its first repeat), where a NaN or Inf first appeared (a replay, only
when the run produced one), the numerics probe and its pass on the run's own model after
the run (``job.plan.capture``), and the op scan (the first repeat only, single process only:
under torchrun its extra steps would be collective; the verdict reads each side's first
repeat's census). Both are copied from the probe cache where the side made them before
(``parity.runner.probecache``), and left out where the plan cut them to fit the budget
(``job.plan.skip``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import ClassVar

from parity.bundle import METRICS, OPS
from parity.model.codec import decode, dumps, loads
from parity.model.job import Mode as ModeName
from parity.model.job import StepCut
from parity.model.metrics import (
    DistributedFigures,
    Flops,
    InputPipeline,
    Memory,
    MemoryPhase,
    Metrics,
)
from parity.model.numerics import NonFiniteOrigin
from parity.probes import pipeline
from parity.probes.flops import count_flops, mfu, peak
from parity.probes.handoff import handoff_ns
from parity.probes.latency import generation_metrics, step_latency
from parity.probes.nonfinite import locate
from parity.probes.numerics import after_run
from parity.probes.pipeline import PipelineTimer
from parity.probes.scan import scan_after_steps
from parity.probes.timing import StepTimer
from parity.probes.waiting import Waiting
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
from parity.workloads.loops import LOOPS, GenerateLoop

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
    #: a loader's timer (wait and copy per step), the prefetched pass's samples and the
    #: loader-fed steps taken again after it
    pipeline: PipelineTimer | None = None
    prefetched_ns: list[int] | None = None
    after_ns: list[int] | None = None
    #: where the host placed the steps' threads (``probes.handoff``; a host device only)
    handoff_ns: float | None = None
    #: seconds waited for a core per second of the steps after the first (``probes.waiting``)
    waited_share: float | None = None


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
        replay = session.dist is None and not session.job.timing.compliance
        write_outputs(
            session,
            timed.numerics,
            nonfinite=partial(nonfinite, session, loaded) if replay else None,
        )
        job, plan = session.job, session.job.timing
        if plan.capture:
            cached(session, "numerics probe", partial(probe, session, loaded))
        if session.dist is None and job.repeat == 0 and not plan.compliance:
            cached(session, "scan", partial(scan, session, loaded))
        session.finish()


def cache_entry(session: SideSession, probe: str) -> Path | None:
    """Where the probe cache keeps this side's ``probe`` for its workload and environment
    (None where the worker recorded no environment)."""
    from parity.runner import probecache

    environment = session.manifest.environment
    return None if environment is None else probecache.entry_dir(session.job, environment, probe)


def cached(session: SideSession, name: str, run: Callable[[], None]) -> None:
    """A first-repeat probe: copied from the probe cache where this side ran it on this
    workload in this environment (``parity.runner.probecache``), else run (unless the
    plan cut it, ``TimingPlan.skip``) and stored there."""
    from parity.runner import probecache

    entry = cache_entry(session, name)
    if entry is not None and probecache.reuse(entry, session.out):
        session.enter(f"{name} (cached)")  # the copy is milliseconds: its span is ~0
        return
    if name in (session.job.timing.skip or ()):
        session.enter(f"{name} (skipped)", announce=False)
        return
    run()
    if entry is not None:
        probecache.store(entry, session.out, name)


def scan(session: SideSession, loaded: Loaded) -> None:
    """The op scan after the timed steps (``ops.json``)."""
    session.enter("scan")
    census = scan_after_steps(
        loaded.runner,
        loaded.model,
        session.device,
        start=loaded.workload.steps,
        graphs=True,
        environment=session.manifest.environment,
    )
    session.write(OPS, census)


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


def step_flops(session: SideSession, loaded: Loaded) -> Flops:
    """A step's FLOPs: from the probe cache where this side counted them on this workload
    in this environment (``parity.runner.probecache``), else counted and kept there (a
    count runs the model under a FLOP counter: a noticeable cost, more on a real model)."""
    from parity.runner import probecache

    entry = cache_entry(session, "flops")
    text = None if entry is None else probecache.recall(entry, probecache.FLOPS)
    if text is not None:
        try:
            return decode(Flops, loads(text))
        except (ValueError, TypeError):  # not a count this parity wrote: count again
            pass
    flops = count_flops(loaded.workload, loaded.full_data)
    if entry is not None:
        with contextlib.suppress(ValueError, TypeError):  # a figure JSON cannot hold: not kept
            probecache.keep(entry, "flops", probecache.FLOPS, dumps(flops))
    return flops


def run_steps(session: SideSession, loaded: Loaded) -> int:
    """The steps this process runs: the workload's, or a timing process's first ``steps``
    of them (``TimingPlan.steps``, sized by the parent from the side's quality run)."""
    steps, asked = loaded.workload.steps, session.job.timing.steps
    return steps if asked is None else max(1, min(asked, steps))


def time_steps(session: SideSession, loaded: Loaded) -> Timed:
    """The first step, then the rest in chunks, each step ending with a synchronize."""
    device, runner, steps = session.device, loaded.runner, run_steps(session, loaded)
    reset_peaks(session)
    # the anti-caching compliance run feeds one identical input at every step
    step = (lambda i: runner.step(0)) if session.job.timing.same_input else runner.step
    plain = StepTimer(step, device.synchronize)
    fed = loader_timer(session, loaded)
    timer = fed or plain
    training = loaded.model.training
    with session.region():
        session.enter("first step", steps=steps)
        samples = timer.run(0, 1)
        # memory per phase: the first step (compile, graph capture) apart from the rest
        first = memory_phase(session)
        reset_peaks(session)
        session.enter("steps", steps=steps)
        waiting = Waiting()
        chunk = max(1, steps // PROGRESS_CHUNKS)
        cut = session.job.timing.cut if session.dist is None else None  # ranks step together
        for start in range(1, steps, chunk):
            samples += timer.run(start, min(chunk, steps - start))
            session.progress(len(samples), steps)
            if _cut_here(cut, samples):
                break
        waited = waiting.share()
        session.note_timed_settings()  # as they were during the steps, not at set-up
        rest = memory_phase(session)
        # right after the steps, while the host keeps their threads where they ran
        handoff = handoff_ns() if device.steps_on_host and session.dist is None else None
        session.enter("finish", announce=False)
        numerics = runner.finish_timing() if session.job.timing_only else runner.finish()
        figures = None
        if session.dist is not None:
            figures = distributed_figures(session, loaded, plain, numerics, samples)
        prefetched = after = None
        if fed is not None:
            prefetched, after = prefetched_pass(session, loaded, fed, training=training)
    return Timed(
        samples_ns=samples,
        first_step=first,
        steps=rest,
        numerics=numerics,
        distributed=figures,
        pipeline=fed,
        prefetched_ns=prefetched,
        after_ns=after,
        handoff_ns=handoff,
        waited_share=waited,
    )


def _cut_here(cut: StepCut | None, samples: list[int]) -> bool:
    """Whether a timing process's steps end here (``TimingPlan.cut``): its steps after the first
    (a compile, a cache filled is no stall) have passed the cut's time with enough in."""
    if cut is None or len(samples) < cut.at_least:
        return False
    return (sum(samples) - samples[0]) * NS > cut.after_s


def loader_timer(session: SideSession, loaded: Loaded) -> PipelineTimer | None:
    """A timer over the workload's loader, if it has one."""
    if loaded.loader is None:
        return None
    return PipelineTimer(
        loaded.loader,
        loaded.runner.step_batch,
        device=loaded.ctx.device,
        synchronize=session.device.synchronize,
        name=loaded.workload.name,
        same_input=session.job.timing.same_input,
    )


def prefetched_pass(
    session: SideSession, loaded: Loaded, timer: PipelineTimer, *, training: bool
) -> tuple[list[int] | None, list[int] | None]:
    """More steps over batches already on the device, then as many fed by the loader
    again (the pass bracketed in time), with the model in the mode it was timed in
    (``finish`` may have switched it to eval); none in a compliance run."""
    try:
        if session.job.timing.compliance:
            return None, None
        session.enter("prefetched steps", announce=False)
        after = loaded.model.training
        loaded.model.train(training)
        try:
            steps = run_steps(session, loaded)
            count = pipeline.prefetch_steps(steps)
            fast = timer.prefetched(steps, count)
            return fast, timer.run(steps + count, count, record=False)
        finally:
            loaded.model.train(after)
    finally:
        timer.release()


def input_pipeline(timed: Timed, steady_from: int) -> InputPipeline | None:
    """The loader's figures over the steady steps (None without a loader)."""
    fed = timed.pipeline
    if fed is None:
        return None
    n = len(timed.samples_ns)
    seconds = partial(_seconds, start=steady_from, stop=n)
    step = seconds(timed.samples_ns)
    if not step:  # no steady step: every figure would be empty
        return None
    return InputPipeline(
        source="loader",
        method=pipeline.METHOD,
        wait_samples_s=seconds(fed.wait_ns),
        copy_samples_s=seconds(fed.copy_ns),
        step_samples_s=step,
        prefetched_samples_s=_seconds(timed.prefetched_ns) if timed.prefetched_ns else None,
        after_samples_s=_seconds(timed.after_ns) if timed.after_ns else None,
        background=pipeline.works_beside(fed.loader),
    )


def _seconds(ns: list[int] | None, start: int = 0, stop: int | None = None) -> tuple[float, ...]:
    return tuple(x * NS for x in (ns or [])[start:stop])


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
    # workload, and counting on meta tensors costs up to seconds of one-off set-up
    flops = Flops(per_step=None, method="counted in the first repeat")
    if job.repeat == 0 and not job.timing.compliance:
        flops = step_flops(session, loaded)
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
        runner = loaded.runner
        loop = (runner.loop, LOOPS[runner.loop]) if isinstance(runner, GenerateLoop) else None
        generation = generation_metrics(token_times[steady], workload.batch_size, loop=loop)
        generation = replace(
            generation, token_times_ns=tuple(tuple(s) for s in token_times[steady])
        )
    elif workload.kind == "infer":
        inference = step_latency(steps.seconds[steady])
    # MFU per device: the step's FLOPs are the global batch's, spread over the ranks
    world = session.dist.world_size if session.dist is not None else 1
    matmul = resolved.matmul if resolved is not None else job.side.precision
    conv = resolved.conv if resolved is not None else None
    return replace(
        out,
        flops=mfu(flops, steps.median, peak(device.spec_key(), matmul, conv, flops), devices=world),
        generation=generation,
        inference=inference,
        distributed=timed.distributed,
        input_pipeline=input_pipeline(timed, steps.steady_from),
        thread_handoff_ns=timed.handoff_ns,
        waited_share=timed.waited_share,
    )
