"""The cheap figures of the pre-run estimate (``StepCost``), measured in the ``freeze``
job: the frozen workload built on the CPU and one step of it timed in float32 (a second
where the workload has one and the first was quick: the first pays one-off set-up), and
a matmul timed in float64, bfloat16 and float16 against float32, which scales that step
to the fp64 reference and to a reduced-precision CPU side (a CPU without bf16 units runs
bf16 several times slower than fp32; one with them, faster). A few hundred milliseconds
for a small model; a model whose step takes minutes pays one step.
"""

from __future__ import annotations

import time

import torch

from parity.model.estimate import StepCost
from parity.spec import SideSpec
from parity.workloads.base import RunContext, Workload
from parity.workloads.frozen import Frozen

#: a first step longer than this is the only one timed
SECOND_STEP_UNDER_S = 5.0
#: the calibration matmul's size and repeats (about 30 MFLOP each: well above timer noise)
MATMUL_N = 256
MATMUL_REPEATS = 5
DTYPES = {"float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def step_cost(workload: Workload, frozen: Frozen) -> StepCost:
    """One (or two) steps of ``workload`` on the CPU in float32, from its frozen bytes."""
    t0 = time.perf_counter()
    weights, data = frozen.load()
    model = workload.build_model()
    model.load_state_dict(weights, strict=True)
    ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
    runner = workload.make_runner(model, data, ctx)
    load_s = time.perf_counter() - t0
    first = _timed(runner.step, 0)
    step_s, method = first, "the first step of one on the CPU in float32"
    if workload.steps > 1 and first < SECOND_STEP_UNDER_S:
        step_s = min(first, _timed(runner.step, 1))
        method = "the second of two steps on the CPU in float32"
    return StepCost(step_s=step_s, load_s=load_s, dtype_ratio=dtype_ratios(), method=method)


def _timed(step: object, i: int) -> float:
    assert callable(step)
    t = time.perf_counter()
    step(i)
    return time.perf_counter() - t


def dtype_ratios() -> dict[str, float]:
    """A matmul's best time in each dtype over float32's on this CPU."""
    best = {name: _matmul_s(dtype) for name, dtype in {"float32": torch.float32, **DTYPES}.items()}
    base = best.pop("float32")
    return {name: round(s / base, 3) for name, s in best.items()} if base > 0 else {}


def _matmul_s(dtype: torch.dtype) -> float:
    a = torch.ones(MATMUL_N, MATMUL_N, dtype=dtype)
    torch.mm(a, a)  # its kernel chosen and warm
    times = []
    for _ in range(MATMUL_REPEATS):
        t = time.perf_counter_ns()
        torch.mm(a, a)
        times.append(time.perf_counter_ns() - t)
    return min(times) / 1e9
