"""Op tracing inside a workload's step: inventory, unsupported ops, fallbacks, host syncs.

:class:`OpScanMode` is a ``TorchDispatchMode``: it sees every ATen op after autograd and
composite decompositions, i.e. the ops a backend is asked to run. For each it records

- the inventory: op overload, phase (forward, backward, optimizer), dtypes, shapes and a
  count per scanned step. The phase comes from autograd (``_current_autograd_node()`` is
  set while backward runs) and from global optimizer step hooks (:func:`optimizer_phase`);
- unsupported ops (``catch=True``): where an op raises for the device (NotImplementedError,
  or a RuntimeError saying "not implemented/supported"), the op, its dtypes and the
  user's source line are recorded and the op runs on the CPU instead (inputs copied in,
  results copied back, in-place and ``out=`` arguments included), so one pass lists every
  unsupported op. If the CPU run fails too, the error is the workload's, and is raised;
- generic fallback signs: outputs on another device than the inputs, host-device copies,
  host syncs (``.item()`` i.e. ``_local_scalar_dense``, ``nonzero`` and other ops whose
  output shape depends on data, boolean-mask indexing, copies to the CPU);
- custom ops: namespaces other than torch's own (aten, prim, profiler, c10d) and the device
  backend's;
- ops with no kernel of the device's own (``catch_all_cpu``, for a backend whose catch-all
  PrivateUse1 kernel is a CPU fallback, as TorchNeuron's is): found from the dispatcher's
  registrations, so a fallback is seen even where the backend's own record is empty.

"The user's source line" is the innermost stack frame outside torch, the standard library
and parity's machinery (parity's built-in workloads count as user code). For an op run by
autograd in backward, it is the forward line that created the autograd node (recorded by
anomaly mode, see :func:`forward_tracebacks`).
"""

from __future__ import annotations

import contextlib
import re
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from parity.devices.base import is_host
from parity.model.ops import Finding, InventoryRow, OpPhase
from parity.probes.source import Source, user_frame, user_frame_from_traceback, where
from parity.safety.redact import redact

#: what a finding is: an op the device refused, a custom op, a host sync, a host-device
#: copy, or an output that turned up on another device than the inputs
FindingKind = Literal[
    "unsupported", "custom_op", "host_sync", "copy", "device_mismatch", "no_device_kernel"
]

MAX_EVENTS = 300
MAX_SHAPES = 4
#: torch's own namespaces; an op in any other (and not the device backend's) is custom
TORCH_NAMESPACES = frozenset(
    {"aten", "prim", "prims", "profiler", "c10d", "_c10d_functional", "_c10d_functional_autograd"}
)
_UNSUPPORTED_RE = re.compile(r"not (currently )?(implemented|supported)", re.IGNORECASE)
DATA_DEPENDENT = frozenset(
    {
        "aten::nonzero",
        "aten::masked_select",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_dim",
        "aten::unique_consecutive",
        "aten::unique_dim_consecutive",
        "aten::equal",
        "aten::is_nonzero",
    }
)
COPY_OPS = frozenset(
    {"aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"}
)


@contextlib.contextmanager
def forward_tracebacks() -> Iterator[None]:
    """Anomaly mode without NaN checks: autograd nodes keep their forward traceback."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        guard = torch.autograd.set_detect_anomaly(True, check_nan=False)
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            guard.__exit__(None, None, None)


@contextlib.contextmanager
def optimizer_phase(mode: OpScanMode) -> Iterator[None]:
    """Global optimizer step hooks that mark the optimizer phase for ``mode``."""
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    def pre(*_: Any) -> None:
        mode.in_optimizer += 1

    def post(*_: Any) -> None:
        mode.in_optimizer = max(0, mode.in_optimizer - 1)

    handles = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


# ------------------------------------------------------------------ the mode


def is_unsupported_error(exc: BaseException) -> bool:
    """An error that says the device cannot run this op (as opposed to a bad input)."""
    if isinstance(exc, NotImplementedError):
        return True
    return isinstance(exc, RuntimeError) and bool(_UNSUPPORTED_RE.search(str(exc)))


def _on_device(t: torch.Tensor) -> bool:
    return not is_host(t.device)


def _short_dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = redact(str(exc)).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:limit]


@dataclass
class _Entry:
    """One inventory row: op, phase and dtypes; shapes and counts per step."""

    op: str
    phase: OpPhase
    dtypes: str
    namespace: str
    shapes: list[str] = field(default_factory=list)
    distinct_shapes: set[str] = field(default_factory=set)
    counts: Counter[int] = field(default_factory=Counter)


@dataclass
class _Event:
    """A finding at one source line: an unsupported op, a host sync, a copy, ..."""

    kind: FindingKind
    op: str
    phase: OpPhase
    source: Source | None
    detail: str
    dtypes: set[str] = field(default_factory=set)
    node: str | None = None
    count: int = 0


class OpScanMode(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Record every op a step dispatches; with ``catch``, run unsupported ops on the CPU."""

    def __init__(
        self, device: torch.device, *, catch: bool = True, catch_all_cpu: bool = False
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.device = device
        self.catch = catch
        self.catch_all_cpu = catch_all_cpu
        self.kernel_less: dict[str, bool] = {}
        self.step = 0
        self.in_optimizer = 0
        self.entries: dict[tuple[str, str, str], _Entry] = {}
        self.events: dict[tuple[str, str, str], _Event] = {}
        self.dropped_events = 0

    # -- the hook ---------------------------------------------------------------------
    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        on_device = any(_on_device(t) for t in tensors) or _device_kwarg(kwargs) is not None
        try:
            out = func(*args, **kwargs)
            ran_on_cpu = False
        except Exception as exc:
            if not (self.catch and on_device and is_unsupported_error(exc)):
                raise
            try:
                out = self._on_cpu(func, args, kwargs, tensors)
            except Exception as cpu_exc:
                # the CPU refuses it too: the workload's error, not the device's
                raise exc from cpu_exc
            self._event("unsupported", func, tensors, _first_line(exc))
            ran_on_cpu = True
        self._record(func, tensors, out, on_device, ran_on_cpu, explicit_device="device" in kwargs)
        return out

    def _phase(self) -> OpPhase:
        if torch._C._current_autograd_node() is not None:
            return "backward"
        return "optimizer" if self.in_optimizer else "forward"

    # -- running an op on the CPU -----------------------------------------------------
    def _on_cpu(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], tensors: list[torch.Tensor]
    ) -> Any:
        target = next((t.device for t in tensors if _on_device(t)), None)
        target = target or _device_kwarg(kwargs)
        moved: dict[int, torch.Tensor] = {}

        def to_cpu(x: Any) -> Any:
            if isinstance(x, torch.Tensor) and _on_device(x):
                copy = x.detach().to("cpu")
                moved[id(copy)] = x
                return copy
            if isinstance(x, torch.device) and not is_host(x):
                return torch.device("cpu")
            return x

        cpu_args, cpu_kwargs = tree_map(to_cpu, (args, kwargs))
        out = func(*cpu_args, **cpu_kwargs)
        # in-place and out= arguments: copy the CPU results back into the device tensors
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            if i < len(args):
                pairs = zip(tree_leaves(args[i]), tree_leaves(cpu_args[i]), strict=False)
            elif arg.name in kwargs:
                pairs = zip(
                    tree_leaves(kwargs[arg.name]), tree_leaves(cpu_kwargs[arg.name]), strict=False
                )
            else:
                continue
            for dev_t, cpu_t in pairs:
                if isinstance(dev_t, torch.Tensor) and id(cpu_t) in moved:
                    if dev_t.shape != cpu_t.shape:
                        dev_t.resize_(cpu_t.shape)
                    dev_t.copy_(cpu_t)

        def back(x: Any) -> Any:
            if not isinstance(x, torch.Tensor):
                return x
            if id(x) in moved:  # an in-place or out= op returns its argument
                return moved[id(x)]
            return x.to(target) if target is not None and is_host(x.device) else x

        return tree_map(back, out)

    # -- recording --------------------------------------------------------------------
    def _record(
        self,
        func: Any,
        tensors: list[torch.Tensor],
        out: Any,
        on_device: bool,
        ran_on_cpu: bool,
        *,
        explicit_device: bool,
    ) -> None:
        name = func._schema.name
        op = f"{name}.{func._overloadname}"
        phase = self._phase()
        dtypes = ",".join(_short_dtype(t) for t in tensors)
        key = (op, phase, dtypes)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = _Entry(op, phase, dtypes, func.namespace)
        shapes = " ".join(str(list(t.shape)).replace(" ", "") for t in tensors)
        if shapes not in entry.distinct_shapes:
            entry.distinct_shapes.add(shapes)
            if len(entry.shapes) < MAX_SHAPES:
                entry.shapes.append(shapes)
        entry.counts[self.step] += 1
        if func.namespace not in TORCH_NAMESPACES and func.namespace != self.device.type:
            self._event("custom_op", func, tensors, "a custom op: test it on the target first")
        if not on_device:
            return
        sync = _host_sync(name, func, tensors, out)
        if sync:
            self._event("host_sync", func, tensors, sync)
        copy = _host_copy(name, tensors, out)
        if copy:
            self._event("copy", func, tensors, copy)
        if self.catch_all_cpu and not ran_on_cpu and self._reaches_catch_all(func):
            self._event(
                "no_device_kernel",
                func,
                tensors,
                "no kernel of the device's own: the backend's catch-all runs it on the CPU",
            )
        if not ran_on_cpu and name not in COPY_OPS and not (sync or explicit_device):
            inputs = {t.device for t in tensors if _on_device(t) or t.dim() > 0}
            outputs = {t.device for t in tree_leaves(out) if isinstance(t, torch.Tensor)}
            stray = outputs - inputs if inputs else set()
            if any(_on_device(t) for t in tensors) and stray:
                self._event(
                    "device_mismatch",
                    func,
                    tensors,
                    f"inputs on {', '.join(sorted(map(str, inputs)))}, output on "
                    f"{', '.join(sorted(map(str, stray)))}: the backend may have run it elsewhere",
                )

    def _reaches_catch_all(self, func: Any) -> bool:
        """Whether the op reaches the device's catch-all kernel: no PrivateUse1 kernel of
        its own and no generic one, or a generic one (structured ops') that calls an
        ``out=`` overload which has none."""
        if func.namespace != "aten":
            return False
        name = f"{func._schema.name}" + (
            f".{func._overloadname}" if func._overloadname != "default" else ""
        )
        found = self.kernel_less.get(name)
        if found is None:
            found = self.kernel_less[name] = _kernel_less(name, func._schema.name)
        return found

    def _event(
        self, kind: FindingKind, func: Any, tensors: list[torch.Tensor], detail: str
    ) -> None:
        node = torch._C._current_autograd_node()
        source = None
        if node is not None:
            metadata = getattr(node, "metadata", None)
            tb = metadata.get("traceback_") if isinstance(metadata, dict) else None
            if isinstance(tb, list):
                source = user_frame_from_traceback([str(x) for x in tb])
        source = source or user_frame(sys._getframe(1))
        op = str(func._schema.name)
        key = (kind, op, where(source))
        event = self.events.get(key)
        if event is None:
            if len(self.events) >= MAX_EVENTS:
                self.dropped_events += 1
                return
            event = self.events[key] = _Event(
                kind, op, self._phase(), source, detail, node=node.name() if node else None
            )
        event.dtypes.add(",".join(_short_dtype(t) for t in tensors))
        event.count += 1

    # -- results ----------------------------------------------------------------------
    def inventory(self, steps: int) -> tuple[InventoryRow, ...]:
        rows = sorted(
            self.entries.values(),
            key=lambda e: (e.namespace in TORCH_NAMESPACES, e.phase, e.op, e.dtypes),
        )
        return tuple(
            InventoryRow(
                op=e.op,
                phase=e.phase,
                dtypes=tuple(e.dtypes.split(",")) if e.dtypes else (),
                shapes=tuple(e.shapes),
                distinct_shapes=len(e.distinct_shapes),
                count_per_step=tuple(e.counts.get(k, 0) for k in range(steps)),
                custom=e.namespace not in TORCH_NAMESPACES,
            )
            for e in rows
        )

    def findings(self, kind: FindingKind) -> tuple[Finding, ...]:
        return tuple(
            Finding(
                op=e.op,
                phase=e.phase,
                dtypes=tuple(sorted(e.dtypes)),
                where=where(e.source),
                source=e.source,
                autograd_node=e.node,
                count=e.count,
                detail=e.detail,
            )
            for e in self.events.values()
            if e.kind == kind
        )


def _kernel_less(name: str, base: str) -> bool:
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    if has(name, "PrivateUse1"):
        return False
    if has(name, "CompositeExplicitAutogradNonFunctional"):
        out = f"{base}.out"
        try:
            return not has(out, "PrivateUse1")
        except RuntimeError:  # no out= overload: the generic kernel is all there is
            return False
    return not (has(name, "CompositeExplicitAutograd") or has(name, "CompositeImplicitAutograd"))


def _device_kwarg(kwargs: dict[str, Any]) -> torch.device | None:
    value = kwargs.get("device")
    if value is None:
        return None
    dev = torch.device(value)
    return None if is_host(dev) else dev


def _host_sync(name: str, func: Any, tensors: list[torch.Tensor], out: Any) -> str | None:
    """Why this op makes the host wait for the device, or None."""
    if name == "aten::_local_scalar_dense":
        return ".item() (or float(), int(), bool(), a Python condition on a tensor)"
    if name in DATA_DEPENDENT:
        return f"{name.removeprefix('aten::')}: the output shape or value depends on the data"
    if name in ("aten::index", "aten::index_put", "aten::index_put_") and any(
        t.dtype in (torch.bool, torch.uint8) for t in tensors[1:]
    ):
        return "boolean-mask indexing: the output shape depends on the data"
    if name == "aten::repeat_interleave" and func._overloadname == "Tensor":
        return "repeat_interleave with tensor repeats: the output shape depends on the data"
    if _host_copy(name, tensors, out) == "device to host":
        return "a copy to the host (.cpu(), .tolist(), .numpy(), .to('cpu'))"
    return None


def _host_copy(name: str, tensors: list[torch.Tensor], out: Any) -> str | None:
    if name == "aten::_to_copy" and tensors:
        outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        src, dst = tensors[0], (outs[0] if outs else None)
    elif name == "aten::copy_" and len(tensors) >= 2:
        dst, src = tensors[0], tensors[1]
    elif name == "aten::_copy_from" and len(tensors) >= 2:
        src, dst = tensors[0], tensors[1]
    else:
        return None
    if dst is None:
        return None
    if _on_device(src) and is_host(dst.device):
        return "device to host"
    if is_host(src.device) and _on_device(dst):
        return "host to device"
    return None
