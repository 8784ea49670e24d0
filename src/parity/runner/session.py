"""One side in one worker process: set-up, manifest, events, the current phase, teardown.

A :class:`SideSession` is what every mode (``parity.runner.modes``) shares. ``setup``
loads plugins, builds the device adapter, joins the torchrun process group where the
mode takes part in one, applies the side's process-wide settings and records them as
``Resolved``, and writes an ``incomplete`` manifest; ``finish`` writes the ``ok`` one
last. In between, a mode announces phases (``enter``: the parent tails
``events.jsonl`` for its live display, and a failure is recorded with the phase it
happened in), writes documents (``write``: rank 0 of a torchrun side writes the bundle)
and runs its timed work inside ``region`` (``+emulate`` and the record of ops that
refuse ``+deterministic``, whose counts go into the ``ok`` manifest).

The session also holds the failure scan a mode arms before its timed steps: if they
raise, the worker scans the same runner from step 0, so that a failed bundle still lists
every unsupported op.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn

from parity.bundle import MANIFEST, OPS, io_reason, write_doc
from parity.devices import get_device
from parity.devices.base import Device
from parity.errors import OutputError
from parity.model import SCHEMA_VERSION
from parity.model.codec import dumps
from parity.model.job import EVENTS_FILE, Event, Job
from parity.model.manifest import (
    DistInfo,
    Environment,
    GlobalFlags,
    Items,
    Manifest,
    Resolved,
    TorchSettings,
)
from parity.model.spec import SideSpec
from parity.plugins import load_plugins
from parity.probes import autocast_policy, environment, settings
from parity.probes.determinism import RefusalRecorder
from parity.probes.emulate import EmulateMode
from parity.probes.scan import failure_scan
from parity.runner import distributed
from parity.version import __version__
from parity.workloads import resolve
from parity.workloads.base import StepRunner, Workload

NS = 1e-9
AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


class EventLog:
    """Append-only ``events.jsonl``, one typed :class:`Event` per line (a few dozen per
    run: each is appended whole and the file closed again, so a crash loses none)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def emit(self, event: Event) -> None:
        try:
            with self.path.open("a") as f:
                f.write(dumps(event, indent=None) + "\n")
        except OSError as exc:
            raise OutputError(f"could not write {self.path}: {io_reason(exc)}") from exc


def apply_settings(side: SideSpec, device: Device, workload: Workload | None) -> Resolved:
    """Apply the side's process-wide settings; return every setting as it was resolved."""
    if side.threads is not None:
        torch.set_num_threads(side.threads)
    determinism: tuple[str, ...] = ()
    if side.deterministic:
        determinism = tuple(device.enable_determinism())
        # warn-only: a run goes on past an op that refuses, and the refusals are recorded
        torch.use_deterministic_algorithms(True, warn_only=True)
    reduced = side.precision != "fp32"
    compile_backend = side.compile_backend or device.default_compile_backend
    honoured = device.honours_compile_mode or compile_backend != device.default_compile_backend
    mode = side.compile_mode if side.compile else None
    return Resolved(
        compile_mode=(mode if honoured else "default") if mode else None,
        compile_mode_ignored=mode if mode and not honoured and mode != "default" else None,
        precision=side.precision,
        autocast_policy=(side.autocast or device.autocast_policy) if reduced else None,
        autocast_device_type=device.autocast_type if reduced else None,
        autocast_dtype=AUTOCAST_DTYPES.get(side.precision),
        matmul=device.matmul_dtype(side.precision),
        conv=device.conv_dtype(side.precision),
        compile_backend=compile_backend if side.compile else None,
        threads=torch.get_num_threads(),
        deterministic=torch.are_deterministic_algorithms_enabled(),
        determinism=determinism,
        emulate=side.emulate,
        steps=workload.steps if workload is not None else None,
        items_per_step=Items(**workload.items_per_step()) if workload is not None else None,
    )


@dataclass(frozen=True)
class ArmedScan:
    """What a failure scan needs, should the timed steps raise."""

    runner: StepRunner
    model: nn.Module
    #: ``time.monotonic()`` after which there is no time left for a scan
    deadline: float


class SideSession:
    """One side's worker process, shared by its mode (see the module's docstring)."""

    def __init__(self, job: Job, out: Path, *, started_ns: int) -> None:
        self.job = job
        self.out = out
        self.started_ns = started_ns
        self.phase = "import"
        #: rank 0 (or a plain process) writes the bundle and the events
        self.leader = int(os.environ.get("RANK", "0")) == 0
        self.events = EventLog(out / EVENTS_FILE) if self.leader else None
        self.dist: DistInfo | None = None
        self.workload: Workload | None = None
        self.armed: ArmedScan | None = None
        self.emulated_calls = 0
        self.refused: list[str] = []
        self._device: Device | None = None
        self._manifest: Manifest | None = None
        self._autocast_lib: object | None = None
        self._ready_ns: int | None = None
        #: torch's settings as parity set them up, and as they were in the timed steps
        self.settings_at_setup: TorchSettings | None = None
        self.settings_timed: TorchSettings | None = None

    # -- set-up -------------------------------------------------------------------------
    def setup(self, *, join_group: bool = True) -> None:
        """Device, process group (``join_group``), settings, workload, incomplete manifest."""
        load_plugins()
        side = self.job.side
        device = get_device(side.device, side.index)
        self.enter("setup")
        device.check_available()
        self.dist = distributed.setup(device) if join_group else None
        if self.dist is not None:
            device = device.for_rank(self.dist.local_rank)  # one device per process
            self.leader = self.dist.leader
        device.activate()
        self._device = device
        if self.job.frozen is not None:
            self.workload = resolve(self.job.workload, home=self.job.home)
        resolved = apply_settings(side, device, self.workload)
        # another device's autocast lists on the CPU, for the life of the process
        self._autocast_lib = autocast_policy.install(side.autocast) if side.autocast else None
        self.settings_at_setup = settings.read()
        self._manifest = Manifest(
            schema_version=SCHEMA_VERSION,
            parity_version=__version__,
            status="incomplete",
            reason="the worker did not finish",
            role=self.job.role,
            repeat=self.job.repeat,
            mode=self.job.mode,
            side=side,
            workload=self.job.workload_ref(),
            environment=environment.collect(device),
            resolved=resolved,
            started_unix=time.time(),
            pid=os.getpid(),
            launch=self.job.launch,
            distributed=self.dist,
        )
        self._ready_ns = time.perf_counter_ns()
        self.write(MANIFEST, self._manifest)

    @property
    def device(self) -> Device:
        if self._device is None:
            raise RuntimeError("the side is not set up yet: call SideSession.setup() first")
        return self._device

    @property
    def manifest(self) -> Manifest:
        if self._manifest is None:
            raise RuntimeError("the side is not set up yet: call SideSession.setup() first")
        return self._manifest

    def require_workload(self) -> Workload:
        if self.workload is None:
            raise RuntimeError(f"a {self.job.mode} job needs a frozen workload, and has none")
        return self.workload

    def startup(self) -> tuple[float | None, float]:
        """Seconds from the parent's launch, and from the worker's first line, to the end
        of set-up (interpreter start, imports, device init, settings)."""
        if self._ready_ns is None:
            raise RuntimeError("the side is not set up yet: call SideSession.setup() first")
        spawned = self.job.spawned_ns
        # perf_counter is system-wide on Linux; elsewhere the parent's figure is meaningless
        launch = (self._ready_ns - spawned) * NS if spawned else None
        return launch, (self._ready_ns - self.started_ns) * NS

    # -- phases and events --------------------------------------------------------------
    def enter(
        self,
        phase: str,
        *,
        steps: int | None = None,
        duration_s: float | None = None,
        announce: bool = True,
    ) -> None:
        """Enter a phase; ``announce`` tells the parent (``events.jsonl``)."""
        self.phase = phase
        if announce:
            self.emit(
                Event(
                    t_ns=time.perf_counter_ns(),
                    event="phase",
                    phase=phase,
                    steps=steps,
                    duration_s=duration_s,
                )
            )

    def progress(self, done: int, steps: int | None) -> None:
        self.emit(Event(t_ns=time.perf_counter_ns(), event="progress", done=done, steps=steps))

    def emit(self, event: Event) -> None:
        if self.events is not None:
            self.events.emit(event)

    # -- writing the bundle -------------------------------------------------------------
    def write(self, name: str, doc: object) -> None:
        """Write a typed document into the bundle (rank 0 only under torchrun)."""
        if self.leader:
            write_doc(self.out / name, doc)

    def save_tensors(self, name: str, tensors: dict[str, torch.Tensor]) -> None:
        """Write tensors as safetensors (rank 0 only); a file cut short by an I/O error is
        removed, and the error is an ``OutputError``."""
        if not (self.leader and tensors):
            return
        path = self.out / name
        try:
            save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            raise OutputError(f"could not write {path}: {io_reason(exc)}") from exc

    @contextlib.contextmanager
    def region(self) -> Iterator[None]:
        """The side's numerics modes around timed work: ``+emulate`` and the record of ops
        that refuse ``+deterministic``; what they saw goes into the ``ok`` manifest."""
        side = self.job.side
        emulate = EmulateMode(side.emulate) if side.emulate else None
        refusals = RefusalRecorder(side.deterministic)
        try:
            with emulate if emulate is not None else contextlib.nullcontext(), refusals:
                yield
        finally:
            self.emulated_calls += emulate.calls if emulate is not None else 0
            self.refused += [op for op in refusals.ops if op not in self.refused]

    def finish(self) -> None:
        """The ``ok`` manifest, with what the run resolved after the fact, written last."""
        side, resolved = self.job.side, self.manifest.resolved
        if resolved is not None:
            resolved = replace(
                resolved,
                emulated_calls=self.emulated_calls if side.emulate else None,
                nondeterministic_ops=tuple(self.refused) if side.deterministic else None,
            )
            resolved = self._as_observed(self._as_timed(resolved))
        self._manifest = replace(
            self.manifest,
            status="ok",
            reason=None,
            resolved=resolved,
            environment=self._environment_as_timed(),
            finished_unix=time.time(),
        )
        self.enter("done")
        self.write(MANIFEST, self._manifest)

    def note_timed_settings(self) -> None:
        """Read torch's settings now, right after the timed steps (the workload's code has
        run: ``build_model``, ``make_runner`` and the steps)."""
        self.settings_timed = settings.read()

    def _as_timed(self, resolved: Resolved) -> Resolved:
        """``resolved`` with the settings of the timed steps: what ran, what changed."""
        timed, before = self.settings_timed, self.settings_at_setup
        if timed is None or before is None:
            return resolved
        changed = settings.changes(before, timed)
        return replace(
            resolved,
            threads=timed.num_threads,
            deterministic=timed.deterministic_algorithms,
            timed=timed,
            changed=changed or None,
        )

    def _environment_as_timed(self) -> Environment | None:
        """The environment with torch's global flags as the timed steps ran with them (the
        workload's ``build_model`` may have set threads, determinism or the float32 matmul
        precision after parity read them at set-up)."""
        env, timed = self.manifest.environment, self.settings_timed
        if timed is None or env is None:
            return env
        flags = GlobalFlags(
            deterministic_algorithms=timed.deterministic_algorithms,
            float32_matmul_precision=timed.float32_matmul_precision,
            num_threads=timed.num_threads,
        )
        return replace(env, flags=flags)

    def _as_observed(self, resolved: Resolved) -> Resolved:
        """``resolved`` with the autocast policy seen on the device (a reduced-precision
        side, after its work: a few small ops under its autocast), where it is conclusive."""
        dtype = resolved.autocast_dtype
        if dtype is None or resolved.autocast_device_type is None:
            return resolved
        device = self.device
        try:
            seen = autocast_policy.observe(
                device.torch_device, resolved.autocast_device_type, getattr(torch, dtype)
            )
        except Exception:  # a device that cannot run them: the adapter's word stands
            return resolved
        found = autocast_policy.classify(seen, dtype)
        return replace(
            resolved, autocast_observed=seen, autocast_policy=found or resolved.autocast_policy
        )

    def teardown(self) -> None:
        """After a mode finished: leave the process group (every rank waits for rank 0)."""
        if self.dist is not None:
            distributed.teardown()

    # -- the failure scan ---------------------------------------------------------------
    def arm_failure_scan(self, runner: StepRunner, model: nn.Module) -> None:
        """Scan ``runner`` from step 0 should the timed steps raise (single process only:
        under torchrun the scan's steps would wait for ranks that are gone)."""
        if self.dist is None:
            deadline = time.monotonic() + self.job.timeout_s / 3
            self.armed = ArmedScan(runner=runner, model=model, deadline=deadline)

    def disarm_failure_scan(self) -> None:
        self.armed = None

    def scan_after_failure(self, exc: BaseException) -> bool:
        """After ``exc``: write ``ops.json`` if a scan was armed and a third of the side's
        timeout is left (so that the scan cannot turn a failure into a timeout)."""
        armed, self.armed = self.armed, None
        if armed is None or time.monotonic() > armed.deadline:
            return False
        census = failure_scan(
            exc, armed.runner, armed.model, self.device, environment=self.manifest.environment
        )
        if census is None:
            return False
        self.write(OPS, census)
        return True
