"""The load phase every mode but ``reference`` and ``script`` shares: frozen weights and
data onto the side's device, sharded and wrapped under torchrun, compiled with
``+compile``, and a runner for the workload's steps.

The model is built on the CPU and the frozen weights are copied into it. (Building on the
meta device would skip initialisation, but its first use costs about a second of one-off
set-up in torch, more than initialising a small model.)
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from parity.errors import WorkloadError
from parity.model.job import TimingPlan
from parity.model.metrics import MemoryPhase
from parity.probes import memory
from parity.runner import distributed
from parity.runner.session import NS, SideSession
from parity.workloads.base import Batch, RunContext, StepRunner, Workload, takes_batches
from parity.workloads.frozen import Frozen, read_frozen

Tensors = dict[str, torch.Tensor]


def verified_frozen(session: SideSession) -> Frozen:
    """The job's frozen workload, verified by content (every file's sha256 as frozen, no
    link, nothing else in it) and checked to be the one the parent prepared."""
    if session.job.frozen is None:
        raise RuntimeError(f"a {session.job.mode} job needs a frozen workload, and has none")
    frozen = read_frozen(Path(session.job.frozen))
    if frozen.fingerprint != session.job.fingerprint:
        raise WorkloadError(
            f"the frozen workload {frozen.path} changed on disk since parity prepared it: run again"
        )
    return frozen


def frozen_inputs(session: SideSession) -> tuple[Tensors, Tensors]:
    """The frozen weights and data on the CPU, after checking they are the job's."""
    return verified_frozen(session).load()


def load_model(workload: Workload, weights: Tensors) -> nn.Module:
    """The workload's model on the CPU with the frozen weights in it."""
    model = workload.build_model()
    model.load_state_dict(weights, strict=True)
    return model


def compile_module(model: nn.Module, *, backend: str, mode: str | None = None) -> nn.Module:
    compiled: nn.Module = torch.compile(model, backend=backend, mode=mode)  # type: ignore[assignment]
    return compiled


def memory_phase(session: SideSession) -> MemoryPhase:
    """The device's and the host's peaks since the last reset (after a synchronize)."""
    return MemoryPhase(device=session.device.memory_peaks(), host_peak_rss=memory.host_peak_rss())


def reset_peaks(session: SideSession) -> None:
    session.device.reset_peak_memory()
    memory.reset_host_peak()


@dataclass(kw_only=True)
class Loaded:
    """A workload ready to step on the side's device."""

    workload: Workload
    weights: Tensors
    #: this process's data on the device (its shard under torchrun)
    data: Tensors
    #: the whole global batch on the device (FLOPs, the numerics probe)
    full_data: Tensors
    model: nn.Module
    runner: StepRunner
    ctx: RunContext
    load_s: float
    memory: MemoryPhase
    #: the workload's input pipeline (``make_loader``), over this process's CPU data
    loader: Iterable[Batch] | None = None
    #: the state the runner's model started the run with (weights and buffers on the CPU,
    #: and its train/eval mode as built), kept for the numerics pass after the run
    start: Start | None = None

    def fresh_model(self) -> nn.Module:
        """Another copy of the model with the frozen weights, on the device (not compiled)."""
        return load_model(self.workload, self.weights).to(self.ctx.device)

    def restored_model(self) -> nn.Module:
        """The runner's own model (eager: under ``+compile`` the module it wraps) with the
        state it started the run with restored: its modules keep whatever else the run
        left in them. Only with a ``start`` (the numerics probe's run)."""
        assert self.start is not None, "no starting state was kept"
        module: nn.Module = getattr(self.model, "_orig_mod", self.model)
        module.load_state_dict(self.start.state)
        return module.train(self.start.training)


@dataclass(frozen=True)
class Start:
    """A model's state when the run began."""

    state: Tensors
    training: bool

    @classmethod
    def of(cls, model: nn.Module, training: bool) -> Start:
        module: nn.Module = getattr(model, "_orig_mod", model)
        state = {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
        return cls(state=state, training=training)


def load(session: SideSession) -> Loaded:
    """The load phase (timed apart): model and data onto the device, and a runner."""
    session.enter("load")
    workload, device, side = session.require_workload(), session.device, session.job.side
    # a measure job's settings (another mode loading a workload has none of them)
    timed = session.job.plan if isinstance(session.job.plan, TimingPlan) else None
    frozen = verified_frozen(session)  # hashing the files is not part of loading them
    memory.reset_host_peak()
    t0 = time.perf_counter_ns()
    weights, cpu_data = frozen.load()
    model = load_model(workload, weights).to(device.torch_device)
    full_data = {k: v.to(device.torch_device) for k, v in cpu_data.items()}
    data = full_data
    if session.dist is not None:  # the global batch stays the workload's: each rank a slice
        data = distributed.shard(full_data, workload.batch_size, session.dist)
        if workload.kind == "train":
            model = distributed.wrap(model, device, session.dist, side.fsdp)
    device.synchronize()
    load_s = (time.perf_counter_ns() - t0) * NS
    mem = memory_phase(session)
    ctx = RunContext(
        device=device.torch_device,
        side=side,
        autocast_type=device.autocast_type,
        synchronize=device.synchronize,
        forced=torch.tensor(timed.forced) if timed is not None and timed.forced else None,
    )
    resolved = session.manifest.resolved
    if resolved is not None and resolved.compile_backend is not None:
        ctx.compile_fn = partial(
            compile_module, backend=resolved.compile_backend, mode=resolved.compile_mode
        )
        model = ctx.compile_fn(model)
    training = getattr(model, "_orig_mod", model).training
    runner = workload.make_runner(model, data, ctx)
    # what the runner's model starts from (a runner may change it), for the numerics pass
    # after the run; not under torchrun, whose model is wrapped and sharded
    keep = timed is not None and timed.capture and session.dist is None
    return Loaded(
        workload=workload,
        weights=weights,
        data=data,
        full_data=full_data,
        model=model,
        runner=runner,
        ctx=ctx,
        load_s=load_s,
        memory=mem,
        loader=make_loader(session, workload, runner, cpu_data),
        start=Start.of(model, training) if keep else None,
    )


def make_loader(
    session: SideSession, workload: Workload, runner: StepRunner, cpu_data: Tensors
) -> Iterable[Batch] | None:
    """The workload's loader over this process's CPU data (its shard under torchrun)."""
    if session.dist is not None:
        cpu_data = distributed.shard(cpu_data, workload.batch_size, session.dist)
    loader = workload.make_loader(cpu_data)
    if loader is not None and not takes_batches(runner):
        raise WorkloadError(
            f"workload {workload.name} has a loader (make_loader) but its runner "
            f"{type(runner).__name__} takes no batches: implement step_batch(i, batch), or "
            "use NamedInferRunner or NamedTrainRunner"
        )
    return loader
