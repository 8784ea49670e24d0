"""Script mode, the child's half: run a user's unmodified script under parity's hooks.

Run as ``python -m parity.runner.script_wrapper BUNDLE_TMP_DIR`` (the launcher does, for
a job whose ``mode`` is ``script``). The directory holds ``job.json``; the wrapper sets
the side up as the worker does (threads, determinism), installs its hooks, runs the
script with ``runpy`` as ``__main__`` (``sys.argv`` and ``sys.path[0]`` as ``python
script.py`` would have them), and writes a normal bundle: ``metrics.json`` with one step
time per optimizer step, ``numerics.json`` with one loss per step, memory peaks.

The hooks, all global and installed from outside the script:

- ``torch.optim.optimizer.register_optimizer_step_post_hook``: a step ends when the
  first optimizer that steps finishes ``step()``; the hook synchronises the device and
  reads ``perf_counter_ns``, so step ``i`` is the time between two such ends (step 0
  starts at the script's first module call);
- ``torch.Tensor.backward`` and ``torch.autograd.backward`` (and ``GradScaler.scale``,
  so that a scaled loss is recorded unscaled): a scalar loss is kept as a detached
  device tensor, with no host sync inside the step, and read after the script ends;
  a step's loss is the mean of the losses backpropagated in it;
- a global module forward pre-hook, only until the first step, for the first call's time;
- the side's precision as an autocast region around the whole script (main thread), and
  ``+emulate`` as its torch-function mode.
"""

from __future__ import annotations

import sys
import time

_T0 = time.perf_counter_ns()

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import runpy  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

NS = 1e-9
PROGRESS_EVERY_S = 1.0
_phase = "import"


class ScriptProbe:
    """The global hooks: step ends, losses, the first module call.

    ``clock`` is the seam tests swap for a fake. Nothing here syncs with the host inside
    a step except the device synchronize at each step's end (as parity's own timer does).
    """

    clock: Callable[[], int] = staticmethod(time.perf_counter_ns)

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


def script_metrics(
    probe: ScriptProbe,
    startup: dict[str, float | None],
    script_start_ns: int,
    end_ns: int,
    memory: dict[str, Any],
) -> dict[str, Any]:
    from parity.stats import detect_steady, summarize

    seconds = [s * NS for s in probe.samples_ns(script_start_ns)]
    rest = seconds[1:]
    steady = detect_steady(rest) if rest else None
    start = steady.start if steady else 0
    steady_samples = rest[start:]
    summary = summarize(steady_samples) if steady_samples else None
    first_call = probe.first_call_ns or script_start_ns
    return {
        "units": "seconds",
        "phases": {
            **startup,
            # the script's own start-up: its imports, model and data, until a module runs
            "load_s": (first_call - script_start_ns) * NS,
            "first_step_s": seconds[0],
            "warmup_s": sum(rest[:start]),
            "warmup_steps": start,
            "steady_s": sum(steady_samples),
            "steady_steps": len(steady_samples),
            "after_steps_s": (end_ns - probe.step_ends_ns[-1]) * NS,
            "script_s": (end_ns - script_start_ns) * NS,
        },
        "steady_state": steady.to_dict() if steady else None,
        "steady_from_step": 1 + start,
        "step_samples_s": seconds,
        "summary": summary.to_dict() if summary else None,
        "noise_warnings": summary.warnings() if summary else [],
        "throughput": {
            "samples_per_s": None,
            "tokens_per_s": None,
            "steps_per_s": 1 / summary.median if summary and summary.median > 0 else None,
        },
        "memory": memory,
        "script": {
            "optimizer_steps": probe.optimizer_steps,
            "timed_steps": len(probe.step_ends_ns),
            "backward_calls": probe.backward_calls,
            "step": "between two ends of the first optimizer's step(), each after a device "
            "synchronize; step 0 from the script's first module call",
        },
    }


def run(job: Any, out: Path, set_phase: Callable[[str], None]) -> None:
    import torch

    from parity import __version__
    from parity.bundle import MANIFEST, SCHEMA_VERSION, write_json
    from parity.devices import get_device
    from parity.plugins import load_plugins
    from parity.probes import environment, memory
    from parity.runner.job import EVENTS_FILE
    from parity.runner.phases import Events, configure
    from parity.runner.script import UNVERIFIED
    from parity.spec import parse_side

    events = Events(out / EVENTS_FILE)
    load_plugins()
    side = parse_side(job.side, check_device=False)
    device = get_device(side.device, side.index)
    set_phase("setup")
    events.emit("phase", phase="setup")
    device.check_available()
    device.activate()
    settings = configure(side, device)
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "parity_version": __version__,
        "status": "incomplete",
        "reason": "the script did not finish",
        "role": job.role,
        "repeat": job.repeat,
        "side": side.to_dict(),
        "workload": {
            "spec": job.workload,
            "fingerprint": job.fingerprint,
            "parts": job.parts,
            "description": job.description,
        },
        "script_mode": True,
        "contract": {"verified": False, "reason": UNVERIFIED},
        "environment": environment.collect(device),
        "settings": {**settings, **job.settings},
        "started_unix": time.time(),
        "pid": os.getpid(),
    }
    write_json(out / MANIFEST, manifest)
    os.environ.update(
        PARITY_DEVICE=side.device_string, PARITY_SIDE=str(side), PARITY_PRECISION=side.precision
    )
    now = time.perf_counter_ns()
    startup = {
        "start_import_s": (now - job.spawned_ns) * NS if job.spawned_ns else None,
        "worker_import_s": (now - _T0) * NS,
    }
    mem: dict[str, Any] = {}

    def peaks() -> dict[str, Any]:
        return {"device": device.memory_peaks(), "host_peak_rss": memory.host_peak_rss()}

    def first_call() -> None:
        mem["load"] = peaks()
        device.reset_peak_memory()
        memory.reset_host_peak()

    def first_step() -> None:
        mem["first_step"] = peaks()
        device.reset_peak_memory()
        memory.reset_host_peak()

    last = [time.monotonic()]

    def on_step(done: int) -> None:
        if time.monotonic() - last[0] >= PROGRESS_EVERY_S:
            last[0] = time.monotonic()
            events.emit("progress", done=done, steps=None)

    probe = ScriptProbe(
        device.synchronize, on_first_call=first_call, on_first_step=first_step, on_step=on_step
    )
    regions: list[contextlib.AbstractContextManager[Any]] = []
    if side.precision != "fp32":
        dtype = torch.bfloat16 if side.precision == "bf16" else torch.float16
        # no weight-cast cache: it lives until the region exits, which here is the end of
        # the script, so every forward would reuse the first step's bf16 weights
        regions.append(
            torch.autocast(device_type=device.autocast_type, dtype=dtype, cache_enabled=False)
        )
    if side.emulate:
        from parity.probes.emulate import EmulateMode

        regions.append(EmulateMode(side.emulate))
    set_phase("script")
    events.emit("phase", phase="script")
    memory.reset_host_peak()
    target, args = job.settings["target"], list(job.settings["args"])
    script_start = time.perf_counter_ns()
    probe.install()
    try:
        with contextlib.ExitStack() as stack:
            for region in regions:
                stack.enter_context(region)
            run_script(target, args, module=bool(job.settings["module"]))
    finally:
        probe.uninstall()
        device.synchronize()
        end = time.perf_counter_ns()
    set_phase("finish")
    mem["steps"] = peaks()
    if not probe.step_ends_ns:
        raise RuntimeError(
            "the script made no optimizer step: script mode times training scripts through "
            "the step() of a torch.optim optimizer (see docs/script-mode.md)"
        )
    write_json(out / "metrics.json", script_metrics(probe, startup, script_start, end, mem))
    write_json(
        out / "numerics.json",
        {
            "losses": probe.losses(),
            "outputs": {},
            "extra": {"script_mode": True, "backward_calls": probe.backward_calls},
        },
    )
    write_json(
        out / "capture.json",
        {"error": "script mode: no numerics probe (no fp64 reference, no per-layer capture)"},
    )
    manifest.update(status="ok", reason=None, finished_unix=time.time())
    events.emit("phase", phase="done")
    write_json(out / MANIFEST, manifest)


def run_script(target: str, args: list[str], *, module: bool) -> None:
    """Run the script as ``__main__``; a non-zero ``sys.exit`` is a failure."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    try:
        if module:
            sys.argv = [target, *args]
            sys.path[0] = os.getcwd()
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            sys.path[0] = str(Path(target).parent)
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"the script exited with code {exc.code}") from None
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0


def main(argv: list[str]) -> int:
    tmp = Path(argv[0])
    from parity.runner.job import ERROR_FILE, JOB_FILE, Job

    job = Job.read(tmp / JOB_FILE)
    try:
        run(job, tmp, _set_phase)
    except BaseException as exc:  # the parent needs every failure, KeyboardInterrupt too
        (tmp / ERROR_FILE).write_text(json.dumps(_error(exc)))
        return 3
    return 0


def _set_phase(name: str) -> None:
    global _phase
    _phase = name


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "phase": _phase,
        "traceback": traceback.format_exc(limit=20),
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
