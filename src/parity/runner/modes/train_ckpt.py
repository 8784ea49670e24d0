"""``train_ckpt`` (``parity check rollback`` and ``recovery``): training steps around a
checkpoint.

The plan (a ``CheckpointPlan``) runs the workload's training steps ``start .. stop_at-1``
(``resume_from`` a checkpoint directory sets ``start``), saves a checkpoint after step
``save_at`` into ``checkpoint_dir`` and reports it as a ``checkpoint`` event (with the
worker's pid, for a parent that kills it), and with ``await_kill_s`` waits to be killed
after its last step instead of finishing. The runner must expose ``model`` and
``optimizer`` (``TrainRunner`` does) and may expose ``losses``. ``numerics.json`` holds
the whole loss curve (the steps before the checkpoint as it recorded them, then this
run's) and where the run started, and what it restored or saved.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import ClassVar

import torch
from torch import nn

from parity.bundle import METRICS
from parity.model.job import CheckpointPlan, Event
from parity.model.job import Mode as ModeName
from parity.model.metrics import Memory
from parity.model.numerics import CheckpointEvents, CheckpointRestored, CheckpointSaved
from parity.probes.timing import StepTimer
from parity.runner.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from parity.runner.documents import Steps, write_outputs
from parity.runner.load import Loaded, load, memory_phase, reset_peaks
from parity.runner.modes.base import Mode
from parity.runner.session import SideSession
from parity.workloads.base import StepRunner


def training_parts(runner: StepRunner) -> tuple[nn.Module, torch.optim.Optimizer]:
    model, optimizer = getattr(runner, "model", None), getattr(runner, "optimizer", None)
    if not isinstance(model, nn.Module) or not isinstance(optimizer, torch.optim.Optimizer):
        raise CheckpointError(
            f"{type(runner).__name__} exposes no model and optimizer to checkpoint: use "
            "parity.workloads.loops.TrainRunner or set runner.model and runner.optimizer"
        )
    return model, optimizer


def losses_so_far(runner: StepRunner) -> list[float | None]:
    values = getattr(runner, "losses", None) or []
    out: list[float | None] = []
    for v in values:
        x = float(v.float().item() if isinstance(v, torch.Tensor) else v)
        out.append(x if math.isfinite(x) else None)
    return out


class TrainCkpt(Mode):
    name: ClassVar[ModeName] = "train_ckpt"

    def run(self, session: SideSession) -> None:
        plan = session.job.plan_of(CheckpointPlan)
        loaded = load(session)
        model, optimizer = training_parts(loaded.runner)
        start, before, restored = 0, [], None
        if plan.resume_from:
            session.enter("restore")
            ckpt = load_checkpoint(
                Path(plan.resume_from),
                model,
                optimizer,
                fingerprint=session.job.fingerprint,
                device=session.device,
            )
            start, before = ckpt.step, ckpt.losses
            restored = CheckpointRestored(step=ckpt.step, saved_by=ckpt.side, source=str(ckpt.path))
        stop = plan.stop_at or loaded.workload.steps
        if not start < stop <= loaded.workload.steps:
            raise CheckpointError(
                f"steps {start}..{stop} are outside the workload's {loaded.workload.steps}"
            )
        samples, saved = self.steps(session, loaded, plan, start, stop, before)
        mem = Memory(steps=memory_phase(session))
        if plan.await_kill_s:
            session.enter("awaiting kill")
            time.sleep(plan.await_kill_s)
            raise CheckpointError(f"not killed within {plan.await_kill_s} s after its last step")
        session.enter("finish", announce=False)
        with session.region():
            numerics = loaded.runner.finish()
        steps = Steps.of(samples)
        resolved = session.manifest.resolved
        session.write(
            METRICS,
            steps.metrics(
                phases=steps.phases(startup=session.startup(), load_s=loaded.load_s),
                memory=mem,
                items=resolved.items_per_step if resolved is not None else None,
            ),
        )
        curve = [*before, *numerics.losses]
        events = CheckpointEvents(start=start, restored=restored, saved=saved)
        write_outputs(session, numerics, losses=curve, checkpoint=events)
        session.finish()

    def steps(
        self,
        session: SideSession,
        loaded: Loaded,
        plan: CheckpointPlan,
        start: int,
        stop: int,
        before: list[float | None],
    ) -> tuple[list[int], CheckpointSaved | None]:
        """Steps ``start .. stop-1``, one at a time, with the checkpoint after ``save_at``."""
        model, optimizer = training_parts(loaded.runner)
        reset_peaks(session)
        timer = StepTimer(loaded.runner.step, session.device.synchronize)
        samples: list[int] = []
        saved = None
        with session.region():
            session.enter("steps", steps=stop)
            for i in range(start, stop):
                samples += timer.run(i, 1)
                session.progress(i + 1, stop)
                if plan.save_at is None or i + 1 != plan.save_at:
                    continue
                if plan.checkpoint_dir is None:
                    raise CheckpointError("save_at is set but checkpoint_dir is not")
                session.enter("checkpoint", announce=False)
                path = save_checkpoint(
                    Path(plan.checkpoint_dir),
                    model,
                    optimizer,
                    step=i + 1,
                    losses=before + losses_so_far(loaded.runner),
                    fingerprint=session.job.fingerprint,
                    side=str(session.job.side),
                    device=session.device,
                )
                saved = CheckpointSaved(step=i + 1, to=str(path))
                session.emit(
                    Event(
                        t_ns=time.perf_counter_ns(),
                        event="checkpoint",
                        step=i + 1,
                        path=str(path),
                        pid=os.getpid(),
                    )
                )
                session.enter("steps", announce=False)
        return samples, saved
