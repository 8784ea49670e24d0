"""torch.compile probes on the model's forward: graph breaks, a fullgraph try, recompiles.

The probes compile with the ``eager`` backend (explain uses its own non-compiling backend),
so they need no compiler and tell what Dynamo can capture, not how fast a backend runs
it. They run on the forward calls that :class:`CallCapture` recorded during the scanned
steps: explain and the ``fullgraph=True`` try on the first call (read from explain where it
tells: one graph passes, a graph break fails), recompilations over all of them (a
generation loop's calls differ in shape). Backward and the optimizer step are
not traced. Where Dynamo cannot trace the forward on the device (an op the device lacks,
or one without a fake-tensor kernel there), that is reported and the probes run on a CPU
copy of the model and the inputs, so that the code's graph breaks are still counted.
Recompilations are probed only when the captured calls differ (shapes, dtypes, values).
"""

from __future__ import annotations

import contextlib
import copy
import traceback
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_leaves, tree_map

from parity.devices.base import is_host
from parity.model.ops import (
    BreakReason,
    Explain,
    Fullgraph,
    GraphProbes,
    Recompilations,
    RecompileReason,
)
from parity.probes.source import is_user_file, where_line
from parity.safety.redact import redact

Call = tuple[tuple[Any, ...], dict[str, Any]]
MAX_CALLS = 8
MAX_REASONS = 20
BACKEND = "eager"
NOTE = (
    "compile probes use the 'eager' backend (no compiler): they show what Dynamo "
    "captures of the model's forward; backward and the optimizer step are not traced"
)


def unwrap(model: nn.Module) -> nn.Module:
    """The original module behind a ``torch.compile`` wrapper."""
    inner = getattr(model, "_orig_mod", None)
    return inner if isinstance(inner, nn.Module) else model


class CallCapture:
    """Record the arguments of the first ``limit`` calls of a module's forward."""

    def __init__(self, model: nn.Module, limit: int = MAX_CALLS) -> None:
        self.module = unwrap(model)
        self.limit = limit
        self.calls: list[Call] = []
        self._handle: Any = None

    def _hook(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if len(self.calls) < self.limit:
            self.calls.append((args, dict(kwargs)))

    def __enter__(self) -> CallCapture:
        self._handle = self.module.register_forward_pre_hook(self._hook, with_kwargs=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


def _first_lines(exc: BaseException, lines: int = 3, limit: int = 500) -> str:
    text = [ln for ln in redact(str(exc)).strip().splitlines() if ln.strip()][:lines]
    return f"{type(exc).__name__}: {' '.join(t.strip() for t in text)}"[:limit]


def _user_location(stack: list[traceback.FrameSummary] | None) -> str | None:
    for frame in reversed(stack or []):
        if is_user_file(frame.filename):
            return where_line(frame.filename, frame.lineno or 0)
    if stack:
        return where_line(stack[-1].filename, stack[-1].lineno or 0)
    return None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def explain(module: nn.Module, call: Call) -> Explain:
    """``torch._dynamo.explain`` on one call: graphs, breaks and their reasons."""
    args, kwargs = call
    out = torch._dynamo.explain(module)(*args, **kwargs)
    reasons: dict[tuple[str, str | None], int] = {}
    for r in out.break_reasons:
        lines = redact(str(r.reason)).strip().splitlines()
        key = (lines[0] if lines else "", _user_location(r.user_stack))
        reasons[key] = reasons.get(key, 0) + 1
    return Explain(
        graphs=out.graph_count,
        graph_breaks=out.graph_break_count,
        ops_in_graphs=out.op_count,
        reasons=tuple(
            BreakReason(reason=reason, where=loc, count=n)
            for (reason, loc), n in list(reasons.items())[:MAX_REASONS]
        ),
    )


def fullgraph(module: nn.Module, call: Call) -> Fullgraph:
    """Whether the forward compiles as one graph (``fullgraph=True``)."""
    args, kwargs = call
    torch._dynamo.reset()
    compiled = torch.compile(module, backend=BACKEND, fullgraph=True)
    try:
        compiled(*args, **kwargs)
    except Exception as exc:
        return Fullgraph(passed=False, error=_first_lines(exc))
    finally:
        torch._dynamo.reset()
    return Fullgraph(passed=True, error=None)


def recompilations(module: nn.Module, calls: list[Call]) -> Recompilations:
    """Compile once, call with every captured input: how often Dynamo recompiles, and why."""
    from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

    torch._dynamo.reset()
    clear_compilation_metrics()
    compiled = torch.compile(module, backend=BACKEND)
    try:
        for args, kwargs in calls:
            compiled(*args, **kwargs)
        metrics = list(get_compilation_metrics())
    finally:
        torch._dynamo.reset()
    reasons = [
        RecompileReason(
            function=f"{m.co_name} ({m.co_filename}:{m.co_firstlineno})",
            reason=redact(str(m.recompile_reason)).splitlines()[0],
        )
        for m in metrics
        if getattr(m, "recompile_reason", None)
    ]
    return Recompilations(
        calls=len(calls),
        compilations=len(metrics),
        recompilations=len(reasons),
        reasons=tuple(reasons[:MAX_REASONS]),
    )


def _on_cpu(module: nn.Module, calls: list[Call]) -> tuple[nn.Module, list[Call]]:
    def to_cpu(x: Any) -> Any:
        return x.detach().cpu() if isinstance(x, torch.Tensor) else x

    cpu_module = copy.deepcopy(module).cpu()
    return cpu_module, [tree_map(to_cpu, c) for c in calls]


def _explain(module: nn.Module, call: Call) -> Explain:
    try:
        return explain(module, call)
    except Exception as exc:
        return Explain(error=_first_lines(exc))


def _fullgraph(module: nn.Module, call: Call) -> Fullgraph:
    try:
        return fullgraph(module, call)
    except Exception as exc:
        return Fullgraph(error=_first_lines(exc))


def _recompilations(module: nn.Module, calls: list[Call]) -> Recompilations:
    if _same_calls(calls):
        return Recompilations(
            calls=len(calls),
            compilations=None,
            recompilations=0,
            note="not compiled: every captured call has the same shapes and arguments",
        )
    try:
        return recompilations(module, calls)
    except Exception as exc:
        return Recompilations(error=_first_lines(exc))


def _inferred(ex: Explain) -> Fullgraph | None:
    """What ``fullgraph=True`` would do, read from explain where it tells without a second
    compile: one graph and no break passes; a graph break fails (``fullgraph=True`` turns
    every break into an error, the first one raised). None: compile and see."""
    if ex.graphs == 1 and ex.graph_breaks == 0:
        return Fullgraph(passed=True, error=None, inferred_from="explain")
    if ex.graph_breaks and ex.reasons:
        first = ex.reasons[0]
        where = f" ({first.where})" if first.where else ""
        error = f"graph break: {first.reason}{where}"
        return Fullgraph(passed=False, error=error, inferred_from="explain")
    return None


def _signature(call: Call) -> tuple[Any, ...] | None:
    """What Dynamo guards on, roughly: tensor metadata and plain values (None: unknown)."""
    sig: list[Any] = []
    for leaf in tree_leaves(call):
        if isinstance(leaf, torch.Tensor):
            sig.append((tuple(leaf.shape), leaf.dtype, leaf.device, leaf.requires_grad))
        elif leaf is None or isinstance(leaf, bool | int | float | str):
            sig.append(leaf)
        else:
            return None
    return tuple(sig)


def _same_calls(calls: list[Call]) -> bool:
    first = _signature(calls[0])
    return first is not None and all(_signature(c) == first for c in calls[1:])


def _as_captured(calls: list[Call]) -> contextlib.AbstractContextManager[Any]:
    """Inference mode where the captured calls were made in it (a generation loop's):
    traced outside it, their inference tensors cannot be saved for backward, and every
    probe fails on that instead of telling what Dynamo captures."""
    made = any(
        isinstance(leaf, torch.Tensor) and leaf.is_inference()
        for call in calls
        for leaf in tree_leaves(call)
    )
    return torch.inference_mode() if made else contextlib.nullcontext()


def graph_probes(model: nn.Module, calls: list[Call]) -> GraphProbes:
    """Explain, fullgraph and recompilation probes; never raises.

    If Dynamo cannot trace the forward on the device (an op without a kernel there, or
    without a fake-tensor kernel), that is reported as ``device_error`` and the probes
    run on a CPU copy, so that the graph breaks of the code are still counted.
    """
    if not calls:
        return GraphProbes(
            backend=BACKEND,
            note=NOTE,
            skipped="the model's forward was not called in the scanned steps",
        )
    module = unwrap(model)
    device = next((p.device for p in module.parameters()), None)
    ran_on = str(device) if device is not None else None
    device_error: str | None = None
    with _quiet(), _as_captured(calls):
        try:
            ex = explain(module, calls[0])
        except Exception as exc:
            torch._dynamo.reset()
            if device is None or is_host(device):
                ex = Explain(error=_first_lines(exc))
            else:
                device_error = _first_lines(exc)
                try:
                    module, calls = _on_cpu(module, calls)
                except Exception as copy_exc:
                    return GraphProbes(
                        backend=BACKEND,
                        note=NOTE,
                        ran_on=ran_on,
                        device_error=device_error,
                        skipped=f"no CPU copy of the model: {_first_lines(copy_exc)}",
                    )
                ran_on = "cpu (a copy: tracing on the device failed, see device_error)"
                ex = _explain(module, calls[0])
        full = _inferred(ex) or _fullgraph(module, calls[0])
        recompiled = _recompilations(module, calls)
    return GraphProbes(
        backend=BACKEND,
        note=NOTE,
        ran_on=ran_on,
        device_error=device_error,
        explain=ex,
        fullgraph=full,
        recompilations=recompiled,
    )
