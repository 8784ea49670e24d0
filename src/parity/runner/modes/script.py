"""``script``: a user's unmodified script, run under parity's hooks.

The job's plan (a ``ScriptPlan``) names the script (a file, or a module with ``-m``), its
arguments (the side's values already in the placeholders) and the working directory.
The mode sets the side up as for any workload (threads, determinism), installs its
hooks, runs the script with ``runpy`` as ``__main__`` (``sys.argv`` and ``sys.path[0]``
as ``python script.py`` would have them), and writes a normal bundle: ``metrics.json``
with one step time per optimizer step, ``numerics.json`` with one loss per step, memory
peaks, and a ``capture.json`` that says why there is no numerics probe.

The hooks (:class:`ScriptProbe`), all global and installed from outside the script:

- ``torch.optim.optimizer.register_optimizer_step_post_hook``: a step ends when the
  first optimizer that steps finishes ``step()``; the hook synchronises the device and
  reads ``perf_counter_ns``, so step ``i`` is the time between two such ends (step 0
  starts at the script's first module call);
- ``torch.Tensor.backward`` and ``torch.autograd.backward`` (and ``GradScaler.scale``,
  so that a scaled loss is recorded unscaled): a scalar loss is kept as a detached
  device tensor, with no host sync inside the step, and read after the script ends;
  a step's loss is the mean of the losses backpropagated in it;
- a global module forward pre-hook, only until the first step, for the first call's time;
- ``DataLoader.__iter__`` and the loader iterators' ``__next__``: the time the script
  waits for its batches (main process), summed per step (``input_pipeline``); the copy to
  the device is not attributed (a script's ``.to(device)`` calls cannot be told from its
  other copies without wrapping every tensor method), so it stays in the step, and there
  is no prefetched pass (parity cannot replay a script's batches);
- the side's precision as an autocast region around the whole script (main thread), and
  ``+emulate`` as its torch-function mode.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import torch

from parity.bundle import CAPTURE, METRICS, OUTPUTS
from parity.model.job import Mode as ModeName
from parity.model.job import ScriptPlan
from parity.model.metrics import (
    InputPipeline,
    Memory,
    MemoryPhase,
    Metrics,
    ScriptFigures,
    Throughput,
)
from parity.model.numerics import Capture, RunOutputs
from parity.probes import memory
from parity.runner.documents import Steps
from parity.runner.load import memory_phase, reset_peaks
from parity.runner.modes.base import Mode
from parity.runner.session import NS, SideSession

PROGRESS_EVERY_S = 1.0
NO_PROBE = "script mode: no numerics probe (no fp64 reference, no per-layer capture)"
STEP = (
    "between two ends of the first optimizer's step(), each after a device synchronize; "
    "step 0 from the script's first module call"
)
LOADER = (
    "per steady step: wait = time inside the script's DataLoader.__iter__ and __next__ "
    "(main process); step = between two optimizer steps. The copy to the device is not "
    "attributed (it stays in the step) and there is no prefetched pass: parity cannot "
    "replay a script's batches"
)


class ScriptProbe:
    """The global hooks: step ends, losses, the first module call.

    ``clock`` is the seam tests swap for a fake. Nothing here syncs with the host inside
    a step except the device synchronize at each step's end (as parity's own timer does).
    """

    clock: ClassVar[Callable[[], int]] = staticmethod(time.perf_counter_ns)

    def __init__(
        self,
        synchronize: Callable[[], None],
        *,
        on_first_call: Callable[[], None] | None = None,
        on_first_step: Callable[[], None] | None = None,
        on_step: Callable[[int], None] | None = None,
    ) -> None:
        self.synchronize = synchronize
        self.on_first_call = on_first_call
        self.on_first_step = on_first_step
        self.on_step = on_step
        self.first_call_ns: int | None = None
        self.step_ends_ns: list[int] = []
        self.step_losses: list[list[Any]] = []
        self.pending: list[Any] = []
        self.backward_calls = 0
        self.optimizer_steps: dict[str, int] = {}
        self._clock_optimizer: int | None = None
        self._scaled: set[int] = set()
        self._inside_backward = 0
        self._handles: list[Any] = []
        self._forward_handle: Any = None
        self._restore: list[tuple[Any, str, Any]] = []
        #: DataLoader waits: per step (ns), the current step's so far, batches delivered
        self.step_waits_ns: list[int] = []
        self.pending_wait_ns = 0
        self.batches = 0
        self._waiting = False

    # -- install / uninstall ----------------------------------------------------------
    def install(self) -> None:
        import torch
        from torch.nn.modules.module import register_module_forward_pre_hook
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._on_step))
        self._forward_handle = register_module_forward_pre_hook(self._on_forward)
        self._patch(torch.Tensor, "backward", self._wrap_tensor_backward)
        self._patch(torch.autograd, "backward", self._wrap_autograd_backward)
        scaler = getattr(getattr(torch, "amp", None), "GradScaler", None)
        if scaler is not None:
            self._patch(scaler, "scale", self._wrap_scale)
        from torch.utils.data import dataloader

        self._patch(dataloader.DataLoader, "__iter__", self._wrap_wait)
        iterator = getattr(dataloader, "_BaseDataLoaderIter", None)
        if iterator is not None:  # private: checked, so a torch without it still runs
            self._patch(iterator, "__next__", self._wrap_wait)

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._drop_forward_hook()
        for owner, name, original in reversed(self._restore):
            setattr(owner, name, original)
        self._restore.clear()

    def _patch(self, owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        self._restore.append((owner, name, original))
        setattr(owner, name, wrap(original))

    def _drop_forward_hook(self) -> None:
        if self._forward_handle is not None:
            self._forward_handle.remove()
            self._forward_handle = None

    # -- hooks ------------------------------------------------------------------------
    def _on_forward(self, module: Any, args: Any) -> None:
        if self.first_call_ns is None:
            self.first_call_ns = type(self).clock()
            self.pending_wait_ns = 0  # batches fetched before step 0 began: its load
            if self.on_first_call is not None:
                self.on_first_call()

    def _on_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        name = type(optimizer).__name__
        self.optimizer_steps[name] = self.optimizer_steps.get(name, 0) + 1
        if self._clock_optimizer is None:
            self._clock_optimizer = id(optimizer)
        if id(optimizer) != self._clock_optimizer:
            return  # a second optimizer in the same step (a GAN's): not a step boundary
        self.synchronize()
        self.step_ends_ns.append(type(self).clock())
        self.step_losses.append(self.pending)
        self.pending = []
        self.step_waits_ns.append(self.pending_wait_ns)
        self.pending_wait_ns = 0
        self._scaled.clear()
        if len(self.step_ends_ns) == 1:
            # removed here, outside any module call, so no hook dict changes mid-iteration
            self._drop_forward_hook()
            if self.on_first_step is not None:
                self.on_first_step()
        if self.on_step is not None:
            self.on_step(len(self.step_ends_ns))

    def _record(self, value: Any) -> None:
        import torch

        if isinstance(value, (list, tuple)):
            value = value[0] if len(value) == 1 else None
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            return
        if not value.is_floating_point():
            return
        if id(value) in self._scaled:
            self._scaled.discard(id(value))  # GradScaler.scale recorded it unscaled
            return
        self.pending.append(value.detach())

    def _wrap_tensor_backward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        probe = self

        def backward(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            probe.backward_calls += 1
            probe._record(tensor)
            probe._inside_backward += 1
            try:
                return original(tensor, *args, **kwargs)
            finally:
                probe._inside_backward -= 1

        return backward

    def _wrap_autograd_backward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        probe = self

        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if not probe._inside_backward:  # called directly, not via Tensor.backward
                probe.backward_calls += 1
                probe._record(tensors)
            return original(tensors, *args, **kwargs)

        return backward

    def _wrap_wait(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Time a loader's ``__iter__`` or ``__next__`` (not again when nested)."""
        probe = self

        def timed(loader: Any, *args: Any, **kwargs: Any) -> Any:
            if probe._waiting:
                return original(loader, *args, **kwargs)
            probe._waiting = True
            t0 = type(probe).clock()
            try:
                out = original(loader, *args, **kwargs)
                probe.batches += hasattr(loader, "_next_data")  # an iterator's batch
                return out
            finally:
                probe.pending_wait_ns += type(probe).clock() - t0
                probe._waiting = False

        return timed

    def input_pipeline(self, steps: Steps) -> InputPipeline | None:
        """The steady steps' waits for batches, where the script's loaders gave any."""
        start = steps.steady_from
        if not self.batches or start >= len(steps.seconds):
            return None
        return InputPipeline(
            source="script",
            method=LOADER,
            wait_samples_s=tuple(w * NS for w in self.step_waits_ns[start:]),
            copy_samples_s=None,
            step_samples_s=steps.seconds[start:],
        )

    def _wrap_scale(self, original: Callable[..., Any]) -> Callable[..., Any]:
        probe = self

        def scale(scaler: Any, outputs: Any) -> Any:
            scaled = original(scaler, outputs)
            before = len(probe.pending)
            probe._record(outputs)
            if len(probe.pending) > before:
                probe._scaled.add(id(scaled))
            return scaled

        return scale

    # -- results (after the script) ---------------------------------------------------
    def samples_ns(self, script_start_ns: int) -> list[int]:
        starts = [self.first_call_ns or script_start_ns, *self.step_ends_ns[:-1]]
        return [end - start for start, end in zip(starts, self.step_ends_ns, strict=True)]

    def losses(self) -> list[float | None]:
        """One loss per step (the mean of that step's backward losses), read now."""
        import torch

        out: list[float | None] = []
        for group in self.step_losses:
            if not group:
                out.append(None)
                continue
            value = float(torch.stack([t.float() for t in group]).mean().cpu())
            out.append(value if value == value and abs(value) != float("inf") else None)
        return out


@dataclass(kw_only=True)
class ScriptRun:
    """Memory per phase as the probe's callbacks see the script reach them."""

    session: SideSession
    memory: dict[str, MemoryPhase] = field(default_factory=dict)
    last_progress: float = field(default_factory=time.monotonic)

    def phase_ends(self, name: str) -> None:
        self.memory[name] = memory_phase(self.session)
        reset_peaks(self.session)

    def on_step(self, done: int) -> None:
        if time.monotonic() - self.last_progress >= PROGRESS_EVERY_S:
            self.last_progress = time.monotonic()
            self.session.progress(done, None)


class Script(Mode):
    name: ClassVar[ModeName] = "script"
    join_group: ClassVar[bool] = False

    def run(self, session: SideSession) -> None:
        plan = session.job.plan_of(ScriptPlan)
        side = session.job.side
        os.environ.update(
            PARITY_DEVICE=side.device_string, PARITY_SIDE=str(side), PARITY_PRECISION=side.precision
        )
        startup = session.startup()
        state = ScriptRun(session=session)
        probe = ScriptProbe(
            session.device.synchronize,
            on_first_call=lambda: state.phase_ends("load"),
            on_first_step=lambda: state.phase_ends("first_step"),
            on_step=state.on_step,
        )
        session.enter("script")
        memory.reset_host_peak()
        script_start = time.perf_counter_ns()
        probe.install()
        try:
            with session.region(), self.autocast(session):
                run_script(plan)
                session.note_timed_settings()  # the script's own changes included
        finally:
            probe.uninstall()
            session.device.synchronize()
            end = time.perf_counter_ns()
        session.enter("finish", announce=False)
        state.memory["steps"] = memory_phase(session)
        if not probe.step_ends_ns:
            raise RuntimeError(
                "the script made no optimizer step: script mode times training scripts through "
                "the step() of a torch.optim optimizer (see docs/script-mode.md)"
            )
        session.write(METRICS, script_metrics(probe, startup, script_start, end, state.memory))
        session.write(OUTPUTS, RunOutputs(losses=tuple(probe.losses())))
        session.write(CAPTURE, Capture(error=NO_PROBE))
        session.finish()

    @staticmethod
    @contextlib.contextmanager
    def autocast(session: SideSession) -> Iterator[None]:
        """The side's precision around the whole script (no autocast in fp32)."""
        resolved = session.manifest.resolved
        if resolved is None or resolved.autocast_dtype is None:
            yield
            return
        device_type = resolved.autocast_device_type or session.device.autocast_type
        # no weight-cast cache: it lives until the region exits, which here is the end of
        # the script, so every forward would reuse the first step's bf16 weights
        with torch.autocast(
            device_type=device_type,
            dtype=getattr(torch, resolved.autocast_dtype),
            cache_enabled=False,
        ):
            yield


def script_metrics(
    probe: ScriptProbe,
    startup: tuple[float | None, float],
    script_start_ns: int,
    end_ns: int,
    mem: dict[str, MemoryPhase],
) -> Metrics:
    steps = Steps.of(probe.samples_ns(script_start_ns))
    first_call = probe.first_call_ns or script_start_ns
    phases = steps.phases(
        startup=startup,
        # the script's own start-up: its imports, model and data, until a module runs
        load_s=(first_call - script_start_ns) * NS,
        after_steps_s=(end_ns - probe.step_ends_ns[-1]) * NS,
        script_s=(end_ns - script_start_ns) * NS,
    )
    median = steps.median
    metrics = steps.metrics(
        phases=phases,
        memory=Memory(load=mem.get("load"), first_step=mem.get("first_step"), steps=mem["steps"]),
        items=None,
    )
    return replace(
        metrics,
        throughput=Throughput(steps_per_s=1 / median if median else None),
        input_pipeline=probe.input_pipeline(steps),
        script=ScriptFigures(
            optimizer_steps=dict(probe.optimizer_steps),
            timed_steps=len(probe.step_ends_ns),
            backward_calls=probe.backward_calls,
            step=STEP,
        ),
    )


def run_script(plan: ScriptPlan) -> None:
    """Run the script as ``__main__`` from its working directory; a non-zero
    ``sys.exit`` is a failure."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    os.chdir(plan.cwd)
    sys.argv = [plan.target, *plan.args]
    # first on the path, as ``python -m`` / ``python script.py`` would put it (the worker
    # itself starts without the working directory: ``runner.python``)
    sys.path.insert(0, os.getcwd() if plan.module else str(Path(plan.target).parent))
    try:
        if plan.module:
            runpy.run_module(plan.target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(plan.target, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"the script exited with code {exc.code}") from None
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
