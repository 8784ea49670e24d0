"""Where a NaN or Inf first appeared: the run's steps replayed with every module watched.

Checking every module's output inside the timed steps would add work (and host syncs)
to what is timed, so a measured run only notices a non-finite loss or output afterwards.
Then this probe replays the steps eagerly on fresh frozen weights with a forward hook
on every module that keeps one device flag per call (its output is finite), read once
per step. The first step where a flag is false names the first module, in execution
order of completion (a submodule before its container), whose output was not finite.
A step whose forward passes were all finite but after which a parameter is not names
that parameter's module and says ``update`` (the loss, the backward or the optimizer).
A fault that the replay does not reproduce (a nondeterministic one) is reported as such.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from parity.model.numerics import NonFiniteOrigin
from parity.probes.numerics import first_tensor
from parity.workloads.base import RunContext, Workload

Mode = Callable[[], contextlib.AbstractContextManager[Any]]


class FiniteWatch:
    """Forward hooks that keep, per call, whether each module's output is finite."""

    def __init__(self, model: nn.Module) -> None:
        self.flags: list[tuple[str, torch.Tensor]] = []
        self.handles = [
            module.register_forward_hook(self._hook(name or "(model)"))
            for name, module in model.named_modules()
        ]

    def _hook(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            out = first_tensor(output)
            if out is not None and out.is_floating_point():
                self.flags.append((name, torch.isfinite(out.detach()).all()))

        return hook

    def first_bad(self) -> str | None:
        """The first module since the last call whose output was not finite (one sync)."""
        flags, self.flags = self.flags, []
        if not flags:
            return None
        ok = torch.stack([f for _, f in flags]).cpu()
        bad = (~ok).nonzero()
        return flags[int(bad[0])][0] if bad.numel() else None

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def _bad_parameter(model: nn.Module) -> str | None:
    params = [(n, p) for n, p in model.named_parameters() if p.is_floating_point()]
    if not params:
        return None
    ok = torch.stack([torch.isfinite(p.detach()).all() for _, p in params]).cpu()
    bad = (~ok).nonzero()
    return params[int(bad[0])][0] if bad.numel() else None


def locate(
    workload: Workload,
    fresh_model: Callable[[], nn.Module],
    data: dict[str, torch.Tensor],
    ctx: RunContext,
    *,
    mode: Mode = contextlib.nullcontext,
) -> NonFiniteOrigin:
    """Replay the workload's steps (then ``finish``) until a module's output or a
    parameter is not finite; where that happened."""
    model = fresh_model()
    watch = FiniteWatch(model)
    try:
        runner = workload.make_runner(model, data, replace(ctx, compile_fn=lambda m: m))
        for i in range(workload.steps):
            with mode():
                runner.step(i)
            origin = _origin(watch, model, i)
            if origin is not None:
                return origin
        with mode():
            runner.finish()
        origin = _origin(watch, model, None)
    finally:
        watch.close()
    return origin or NonFiniteOrigin(
        found=False, detail="an eager replay on fresh weights stayed finite (not reproduced)"
    )


def _origin(watch: FiniteWatch, model: nn.Module, step: int | None) -> NonFiniteOrigin | None:
    module = watch.first_bad()
    if module is not None:
        return NonFiniteOrigin(found=True, step=step, module=module, where="forward")
    parameter = _bad_parameter(model)
    if parameter is not None:
        owner = parameter.rpartition(".")[0] or "(model)"
        return NonFiniteOrigin(
            found=True, step=step, module=owner, where="update", parameter=parameter
        )
    return None
