"""Cost: per successful training run, per million tokens, per thousand requests.

Definitions (stated in every report):

- price per accelerator-hour = instance $/h / accelerators per instance (one side runs on
  one accelerator);
- overheads multiply the measured time: x (1 + retry fraction) x (1 + checkpoint
  overhead) / (1 - idle fraction);
- cost per successful training run = price per accelerator-hour x mean time of a run
  (to the target loss where one is set, else to its last step; compile and warm-up
  counted once per run) / success rate over repeats;
- cost per 1M tokens = price per hour / (tokens/s x 3600) x 1e6; per 1k requests the
  same with requests (samples) per second and 1e3;
- the target's break-even price per instance-hour makes its cost equal the baseline's;
- one-off engineering cost = hours x rate, repaid after (engineering cost / saving per
  unit) units where the target is cheaper.

Prices come in the judge's inputs, resolved before judging (``--price``, the plan, or
``devices/specs.toml`` by the bundles' device names), so a verdict depends on its
bundles and inputs alone.
"""

from __future__ import annotations

from dataclasses import replace

from parity.judge.speed import side_step_time
from parity.model.bundle import Bundle, SideRuns
from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.metrics import Generation
from parity.model.quality import Convergence
from parity.model.verdict import (
    ByRole,
    Cost,
    CostInputs,
    Engineering,
    Sensitivity,
    SideCost,
    Speed,
)


def _run_seconds(bundle: Bundle, run_steps: int | None) -> float:
    """A run of ``run_steps`` (None: the workload's own) from a bundle's step times: its
    sum where the bundle ran them all, else its first steps and the median steady step
    for the rest (a timing process runs fewer of the workload's steps)."""
    metrics = bundle.metrics
    samples = metrics.step_samples_s if metrics is not None else ()
    if run_steps is None:
        run_steps = bundle.manifest.workload.parts.steps or len(samples)
        if len(samples) >= run_steps:
            return float(sum(samples))
    if metrics is None or not samples:
        return float(sum(samples))
    start = metrics.steady_from_step
    steady = sorted(metrics.steady_samples)
    median = steady[len(steady) // 2] if steady else samples[-1]
    fixed = sum(samples[:start])  # compile and warm-up, once per run
    return float(fixed + max(run_steps - start, 0) * median)


def _training(
    side: SideRuns, inputs: CostInputs, convergence: Convergence | None, head: SideCost
) -> SideCost:
    if convergence is not None and inputs.run_steps is None:
        seconds = convergence.mean_time_s
        success = convergence.success_rate
        basis = Finding(
            code="cost.basis-time-to-loss",
            severity="context",
            figures={"loss": convergence.target_loss},
        )
    else:
        runs = [_run_seconds(b, inputs.run_steps) for b in side.ok]
        seconds = sum(runs) / len(runs) if runs else None
        success = len(side.ok) / len(side.repeats) if side.repeats else 0.0
        basis = (
            Finding(
                code="cost.basis-steps", severity="context", figures={"steps": inputs.run_steps}
            )
            if inputs.run_steps
            else Finding(code="cost.basis-run", severity="context")
        )
    per_hour = head.usd_per_accelerator_hour or 0.0
    usd = (
        None
        if seconds is None or success == 0
        else per_hour * seconds / 3600 * inputs.overhead / success
    )
    return replace(
        head,
        basis=basis,
        run_seconds=seconds,
        success_rate=success,
        usd_per_successful_run=usd,
        unit="successful run",
        unit_cost=usd,
    )


def _serving(
    side: SideRuns, inputs: CostInputs, head: SideCost, generation: Generation | None
) -> SideCost:
    median = side_step_time(side)
    metrics = side.first.metrics
    items = metrics.items_per_step if metrics is not None else None
    tokens_per_s = items.tokens / median if items and items.tokens and median else None
    samples_per_s = items.samples / median if items and median else None
    if generation is not None and generation.output_tokens_per_s.p50:
        tokens_per_s = generation.output_tokens_per_s.p50
    per_hour = head.usd_per_accelerator_hour or 0.0
    per_tokens = per_hour / (tokens_per_s * 3600) * 1e6 * inputs.overhead if tokens_per_s else None
    per_requests = (
        per_hour / (samples_per_s * 3600) * 1e3 * inputs.overhead if samples_per_s else None
    )
    unit, unit_cost = (
        ("1M tokens", per_tokens) if per_tokens is not None else ("1k requests", per_requests)
    )
    return replace(
        head,
        usd_per_1m_tokens=per_tokens,
        usd_per_1k_requests=per_requests,
        unit=unit,
        unit_cost=unit_cost,
    )


def side_cost(
    side: SideRuns,
    role: str,
    kind: str,
    inputs: CostInputs,
    convergence: Convergence | None,
    generation: Generation | None,
) -> SideCost:
    """``generation``: the side's latency figures pooled over its repeats, as its
    ``SideInfo`` holds them (a serving cost uses their token rate)."""
    price = inputs.prices.get(role)
    if price is None:
        return SideCost(priced=False)
    head = SideCost(
        priced=True,
        price=price,
        usd_per_accelerator_hour=price.per_accelerator_hour,
        overhead=inputs.overhead,
    )
    if kind == "train":
        return _training(side, inputs, convergence, head)
    return _serving(side, inputs, head, generation)


def judge_cost(
    a: SideRuns,
    b: SideRuns,
    kind: str,
    inputs: CostInputs,
    speed: Speed | None,
    convergence: ByRole[Convergence] | None,
    generation: ByRole[Generation | None],
) -> Cost:
    base = side_cost(
        a, "baseline", kind, inputs, convergence.baseline if convergence else None,
        generation.baseline,
    )  # fmt: skip
    target = side_cost(
        b, "target", kind, inputs, convergence.target if convergence else None,
        generation.target,
    )  # fmt: skip
    section = Cost(baseline=base, target=target, inputs=inputs, available=False)
    missing: list[Json] = [
        role for role, c in (("baseline", base), ("target", target)) if not c.priced
    ]
    if missing:
        unpriced = Finding(code="cost.unpriced", severity="context", figures={"missing": missing})
        return replace(section, reason=unpriced)
    cb, ct = base.unit_cost, target.unit_cost
    if not cb or not ct or target.price is None:
        return replace(section, reason=Finding(code="cost.no-basis", severity="context"))
    ratio = ct / cb
    eng = inputs.engineering_hours * inputs.engineering_rate
    saving = cb - ct
    return replace(
        section,
        available=True,
        unit=base.unit,
        cost_ratio=ratio,
        verdict="cheaper" if ratio < 1 else "more expensive",
        break_even_usd_per_hour=target.price.usd_per_hour / ratio,
        engineering=Engineering(usd=eng, units_to_repay=eng / saving if saving > 0 else None)
        if eng
        else None,
        sensitivity=_sensitivity(ratio, speed),
    )


def _sensitivity(ratio: float, speed: Speed | None) -> Sensitivity | None:
    if speed is None:
        return None
    iv = speed.interval
    scale = ratio / speed.ratio
    low, high = iv.low * scale, iv.high * scale
    return Sensitivity(cost_ratio_low=low, cost_ratio_high=high, confidence=iv.confidence)
