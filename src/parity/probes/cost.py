"""The cheap figures of the pre-run estimate (``StepCost``), measured in the ``freeze``
job: the frozen workload built on the CPU and one step of it timed in float32 (where the
first was quick and the workload has more, the median of up to ``FURTHER_STEPS`` after
it, within about ``FURTHER_S``: the first pays one-off set-up, and on a busy machine one
step in a few stalls; the sides' own ``threads=N`` where they agree); what
the run's end costs beyond its steps (a generation workload decodes and scores every
prompt again: ``StepRunner.finish_cost_s``); and a linear layer's matmul timed in
float64, bfloat16 and float16 against float32, which scales that step to the fp64
reference (where that reference is not cached, a step in float64 is timed itself, as
the reference runs it). A reduced precision a side asks for (``bf16``,
``fp16``) is timed itself, a step under its autocast, where the matmul's ratio puts that
step under ``PRECISION_STEP_UNDER_S``: a step is not all matmuls (on a CPU without bf16
units a bf16 linear is 6 times a float32 one where a small model's whole training step
is 8 times and a 135M model's generation step 1.6 times; a CPU with them runs bf16
faster). A few hundred milliseconds for a small model; a model whose step takes minutes
pays one step, and one more in each reduced precision that the ratio keeps under the limit.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from parity.model.estimate import FP64, PRECISION_DTYPE, DecisiveRows, StepCost
from parity.model.spec import Precision, SideSpec
from parity.probes.numerics import first_tensor, summarize
from parity.workloads.base import RunContext, StepRunner, Workload
from parity.workloads.frozen import Frozen

#: a first step longer than this is the only one timed
SECOND_STEP_UNDER_S = 5.0
#: after a quick first step, up to this many more are timed, while they take under
#: ``FURTHER_S`` together, and at least ``LEAST_FURTHER`` whatever they take: on a busy
#: machine one multi-thread step in a few stalls for many times its neighbours' time,
#: and one stalled step times the workload's step count asks for minutes it does not need
FURTHER_STEPS = 8
FURTHER_S = 2.0
LEAST_FURTHER = 2
#: a float64 step at least this long is the only one timed: it costs a phase that runs
#: the workload's every step (a float64 step costs several float32 ones), where a first
#: step's one-off set-up is a small part; a quicker one may be a stall
FP64_SECOND_UNDER_S = 2.0
#: the calibration matmul's size and the least pairs (float32, then the dtype) timed, for
#: at least ``MATMUL_LEAST_S``: about 30 MFLOP each, well above timer noise
MATMUL_N = 256
MATMUL_REPEATS = 7
MATMUL_LEAST_S = 0.05
DTYPES = {"float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: a reduced-precision step is timed itself where the matmul's ratio puts it under this
PRECISION_STEP_UNDER_S = 30.0
#: the values a summary is timed on for the probe's cost (a few milliseconds)
SUMMARY_N = 1 << 20


def step_cost(
    workload: Workload,
    frozen: Frozen,
    precisions: Sequence[Precision] = (),
    fp64: bool = False,
) -> StepCost:
    """One (or two) steps of ``workload`` on the CPU in float32, from its frozen bytes, and
    in each of ``precisions`` that the matmul's ratio does not put over
    ``PRECISION_STEP_UNDER_S`` (one that fails is left to the ratio); with ``fp64``, in
    float64 too, as the fp64 reference runs (last: the model is cast in place)."""
    t0 = time.perf_counter()
    weights, data = frozen.load()
    model = workload.build_model()
    model.load_state_dict(weights, strict=True)
    ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
    runner = workload.make_runner(model, data, ctx)
    load_s = time.perf_counter() - t0
    with _ModuleElements(model) as elements:
        step_s, timed = _steps_s(runner, workload)
    finish_s, forced_s = runner.finish_cost_s(step_s)
    decisive = decisive_rows(workload, model, data, runner, precisions)
    ref_steps = runner.reference_steps(workload.steps)
    which = {1: "the first step of one", 2: "the second of two steps"}.get(
        timed, f"the median of {timed - 1} steps after the first"
    )
    method = f"{which} on the CPU in float32 ({torch.get_num_threads()} thread(s))"
    ratios = dtype_ratios()
    measured: dict[str, float] = {}
    for precision in precisions:
        dtype = PRECISION_DTYPE.get(precision)
        if dtype is None or step_s * ratios.get(dtype, 1.0) > PRECISION_STEP_UNDER_S:
            continue
        side = SideSpec(device="cpu", precision=precision)
        reduced = RunContext(device=torch.device("cpu"), side=side, autocast_type="cpu")
        try:
            in_reduced = workload.make_runner(model, data, reduced)
            measured[precision] = _steps_s(in_reduced, workload, further=1)[0]
        except Exception:
            continue
    if fp64 and step_s * ratios.get("float64", 1.0) <= PRECISION_STEP_UNDER_S:
        with contextlib.suppress(Exception):  # left to the ratio
            measured[FP64] = _fp64_step_s(workload, model, data, ctx)
    return StepCost(
        step_s=step_s,
        load_s=load_s,
        dtype_ratio=ratios,
        method=method,
        precision_step_s=measured,
        finish_steps=round(finish_s / step_s, 3) if step_s > 0 else 0.0,
        forced_steps=round(forced_s / step_s, 3) if step_s > 0 else 0.0,
        reference_steps=ref_steps if ref_steps < workload.steps else None,
        summary_s=round(summaries_s(elements.count), 6),
        decisive=decisive,
    )


def decisive_rows(
    workload: Workload,
    model: torch.nn.Module,
    data: dict[str, torch.Tensor],
    runner: StepRunner,
    precisions: Sequence[Precision],
) -> DecisiveRows | None:
    """The rows a top-1 gate over every prompt's positions will get, foreseen on the first
    batch of prompts: decoded greedily and scored in float32, scored again in each reduced
    precision a side asks for; a row is decisive where its float32 top-2 margin is beyond
    twice the largest logit error of those precisions at the prefill position (the
    near-tie margin is twice the sum of the baseline's and the target's errors against
    fp64 on the prefill logits the run records: the float32 baseline's is small beside a
    reduced precision's). None for a runner without such a gate, or where scoring raised
    (the sides' own run says)."""
    try:
        found = runner.position_logits()
        if found is None:
            return None
        sequence, base = found
        prefill = max(runner.prompt_length, 1) - 1  # as the judge reads the error
        error = 0.0
        for precision in precisions:
            side = SideSpec(device="cpu", precision=precision)
            ctx = RunContext(device=torch.device("cpu"), side=side, autocast_type="cpu")
            again = workload.make_runner(model, data, ctx).position_logits(sequence)
            if again is not None:
                moved = (again[1] - base)[..., prefill, :].abs()
                error = max(error, float(moved.max()))
    except Exception:
        return None
    top2 = base.topk(2, dim=-1).values if base.shape[-1] > 1 else None
    if top2 is None or top2.numel() == 0:
        return None
    margins = top2[..., 0] - top2[..., 1]
    return DecisiveRows(
        rows_per_batch=int(margins.numel()),
        batches=runner.prompt_batches,
        share=round(float((margins > 2 * error).double().mean()), 4),
        follow_steps=workload.batches_follow_steps,
    )


class _ModuleElements:
    """Counts, while entered, the elements of every module's first floating input and
    output, as the numerics probe's recorder summarises them (first call only)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.count = 0
        self.seen: set[str] = set()
        self.handles: list[Any] = []

    def __enter__(self) -> _ModuleElements:
        for name, module in self.model.named_modules():
            self.handles.append(module.register_forward_hook(self._hook(name)))
        return self

    def __exit__(self, *_exc: object) -> None:
        for handle in self.handles:
            handle.remove()

    def _hook(self, name: str) -> Callable[..., None]:
        def hook(_module: torch.nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if name in self.seen:
                return
            self.seen.add(name)
            for value in (first_tensor(output), first_tensor(args)):
                if value is not None and value.is_floating_point():
                    self.count += value.numel()

        return hook


def summaries_s(elements: int) -> float:
    """The probe's summaries of ``elements`` values (see ``_ModuleElements``), seconds: a
    summary of up to ``SUMMARY_N`` values timed (after one untimed), scaled linearly."""
    if elements <= 0:
        return 0.0
    x = torch.randn(min(elements, SUMMARY_N))
    summarize(x)
    t = time.perf_counter()
    summarize(x)
    return (time.perf_counter() - t) * elements / x.numel()


def _fp64_step_s(
    workload: Workload, model: torch.nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
) -> float:
    """A step with the model and float data in float64, as ``parity.runner.modes.reference``
    runs them: the matmul's ratio misses how a step's other ops scale (a convolution's
    float64 kernels can be slower, relative to float32, than a matmul's)."""
    cast = {k: v.double() if v.is_floating_point() else v for k, v in data.items()}
    runner = workload.make_runner(model.double(), cast, ctx)
    return _steps_s(runner, workload, further=1, second_under_s=FP64_SECOND_UNDER_S)[0]


def _steps_s(
    runner: StepRunner,
    workload: Workload,
    further: int = FURTHER_STEPS,
    second_under_s: float | None = None,
) -> tuple[float, int]:
    """A step's seconds: the first, or where it was quick and the workload has more, the
    quicker of the first and the median of those after it (up to ``further``, within
    ``FURTHER_S`` but at least ``LEAST_FURTHER``); and how many steps were timed. A
    reduced precision's steps take one more only: a workload may fail there at a later
    step (abort, hang), which is its side's failure to record, not this set-up job's. A
    first step of ``second_under_s`` or more (default ``SECOND_STEP_UNDER_S``) is the only
    one."""
    first = _timed(runner.step, 0)
    limit = SECOND_STEP_UNDER_S if second_under_s is None else second_under_s
    if workload.steps < 2 or first >= limit:
        return first, 1
    after: list[float] = []
    for i in range(1, min(workload.steps, further + 1)):
        after.append(_timed(runner.step, i))
        if sum(after) >= FURTHER_S and len(after) >= min(further, LEAST_FURTHER):
            break
    return min(first, statistics.median(after)), 1 + len(after)


def _timed(step: object, i: int) -> float:
    assert callable(step)
    t = time.perf_counter()
    step(i)
    return time.perf_counter() - t


def dtype_ratios() -> dict[str, float]:
    """A matmul's time in each dtype over float32's on this CPU (``paired_ratio``)."""
    return {name: round(paired_ratio(_linear(dtype)), 3) for name, dtype in DTYPES.items()}


def paired_ratio(pair: Callable[[], tuple[float, float]]) -> float:
    """The median of ``b / a`` over pairs of timings ``(a, b)`` taken back to back, at
    least ``MATMUL_REPEATS`` of them and for at least ``MATMUL_LEAST_S``: each pair shares
    the machine's pace of its moment, where the best of one dtype's runs against the best
    of another's, timed a moment apart, read the machine's swings as the dtype's cost."""
    ratios: list[float] = []
    began = time.perf_counter()
    while len(ratios) < MATMUL_REPEATS or time.perf_counter() - began < MATMUL_LEAST_S:
        a, b = pair()
        if a > 0:
            ratios.append(b / a)
        if len(ratios) >= 8 * MATMUL_REPEATS:
            break
    return statistics.median(ratios) if ratios else 1.0


def _linear(dtype: torch.dtype) -> Callable[[], tuple[float, float]]:
    """A pair of ``x @ w.T`` timings, float32's then ``dtype``'s: the layout of
    ``nn.Linear`` (its weight transposed), which is what a model's matmuls run. Two
    row-major operands take another kernel, which on a CPU without bf16 units is many
    times slower than the linear's in bf16, and than any model's step in it."""
    ops = [torch.ones(MATMUL_N, MATMUL_N, dtype=d) for d in (torch.float32, dtype)]
    for a in ops:
        torch.nn.functional.linear(a, a)  # its kernel chosen and warm

    def pair() -> tuple[float, float]:
        times = []
        for a in ops:
            t = time.perf_counter_ns()
            torch.nn.functional.linear(a, a)
            times.append((time.perf_counter_ns() - t) / 1e9)
        return times[0], times[1]

    return pair
