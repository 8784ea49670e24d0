"""A comparison costed before its sides run, and planned within ``--budget``.

The ``freeze`` job that prepares the workload also times one step of it on the CPU in
float32 and a matmul in each dtype (``parity.probes.cost``: ``StepCost``). From those, the
workload's step count and what the cache already holds, each phase is costed:

- a side's step: the CPU step scaled by the matmul ratio of its precision (a side on an
  accelerator is not estimated: its first process tells);
- a process: the measured load and its steps, with the overhead of any process
  (``parity.measure.budget.process_s``: the cost model the rounds use as well);
- the quality run: the workload's steps and what its end does after them (a generation
  workload decodes and scores every prompt again, the target's scores the baseline's
  tokens as well: ``StepCost.finish_steps``, ``forced_steps``); the timing processes
  after it: the steps the sizing rule gives at least (``1 + steps // 4 +
  stats.MIN_STEADY``, at most the workload's), two more a side for three;
- the numerics probe: ``PROBE_FIXED_S + PROBE_STEPS`` steps and its summaries of every
  module's input and output (``StepCost.summary_s``: a small CNN's activations cost many
  times its step to summarise); the op scan:
  ``SCAN_FIXED_S + SCAN_STEPS`` steps (the scan's two steps under a dispatch mode, a
  plain step and the compile probes' graph captures), both fitted on what the built-ins
  take (a fixed part and a number of steps' worth, on the built-ins and on a 135M
  checkpoint, whose scan costs about twice its steady steps);
- the fp64 reference and the expected-error run: a full run's steps on the CPU in
  float64 and in the precision (each step timed itself where the freeze job could, else
  the float32 step at the matmul's ratio; one step where the steps leave the outputs
  unchanged: ``StepCost.reference_steps``), and a probe; cached ones cost nothing.

Planned within the budget (``plan``), where the estimate is over it and ``--repeats`` does
not fix the work: the compliance runs go first, then the baseline's op scan (the target's
answers compatibility), then the numerics probes (the gates read the runs' outputs; only
localisation is lost). Three processes a side come first: where they are estimated within
``THREE_OVER`` times the budget they run over it, and the first line says so. Beyond
that, timing processes are cut, down to the quality runs alone (an interval over fewer
than three processes a side is "undetermined"), and the line asks for the budget that
buys three. What is left is the least a
comparison runs: the fp64 reference, the expected-error run, a quality run a side and the
target's op scan; where that is over ``REFUSE_OVER`` times a budget the user gave, the
comparison is refused before anything runs, in one line naming the estimate and the
``--budget`` that holds it (a little over, it runs everything cut, and says so). With no
budget given, a least comparison over ``ASK_OVER_S`` is refused the same way: the default
budget cuts what is optional, but hours of measuring are the user's to ask for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from parity.errors import OptionError
from parity.measure import budget as cost
from parity.model.estimate import FP64, PRECISION_DTYPE, Estimate, PhaseCost, StepCost
from parity.model.side import MeasurePlan
from parity.model.spec import SideSpec

if TYPE_CHECKING:
    from parity.measure.orchestrate import JobTemplate
    from parity.request import CompareRequest

PROBE_FIXED_S = 0.05
PROBE_STEPS = 2
SCAN_FIXED_S = 1.0
SCAN_STEPS = 20
#: the least comparison is refused only when over this many times the budget: one step
#: timed on a loaded machine can read a few times its idle time, and a comparison a
#: little over its budget is measured anyway, with a note
REFUSE_OVER = 3.0
#: with no ``--budget`` given, a comparison whose least plan is estimated over this many
#: seconds is not started: an hour or more is the user's decision, not a default's
ASK_OVER_S = 3600.0
#: three processes a side (everything optional cut) still run where they are estimated
#: within this many times the budget, over it and said so before measuring: fewer leave
#: the speed undetermined, and a second run at a larger budget costs the user more (a
#: loaded machine's freeze job times its steps a few times slow)
THREE_OVER = 2.0
#: the default per-process timeout is raised to this many times the longest process the
#: estimate costs (it holds within 2x either way: benchmarks/estimate_vs_actual.py)
TIMEOUT_OVER = 3.0
#: the phases the budget may cut, in the order it cuts them
COMPLIANCE, BASE_SCAN, PROBES = "compliance runs", "baseline op scan", "numerics probe"
_Cut = Callable[[Estimate], Estimate]


@dataclass(frozen=True, kw_only=True)
class Cached:
    """What the cache already holds for this comparison (each costs only a copy)."""

    reference: bool = False
    expected: bool = False
    #: per role: its numerics probe and op scan
    probe: tuple[bool, bool] = (False, False)
    scan: tuple[bool, bool] = (False, False)


@dataclass(frozen=True, kw_only=True)
class Costed:
    """The inputs of an estimate: the workload's steps, the two sides, the expected-error
    run's side (None: none, or the target's own quality run) and the plan."""

    cost: StepCost
    steps: int
    baseline: SideSpec
    target: SideSpec
    expected: SideSpec | None
    plan: MeasurePlan
    cached: Cached = Cached()


def step_s(cost: StepCost, side: SideSpec) -> float | None:
    """One step of ``side``: the CPU's float32 step scaled by its precision's matmul ratio
    (None for a side not on the CPU)."""
    if side.device != "cpu":
        return None
    measured = cost.precision_step_s.get(side.precision)
    if measured is not None:  # timed itself: a step is not all matmuls
        return measured
    dtype = PRECISION_DTYPE.get(side.precision)
    return cost.step_s * (cost.dtype_ratio.get(dtype, 1.0) if dtype else 1.0)


def timing_steps(steps: int) -> int:
    """Steps of a timing process at the least the sizing rule gives (see the module)."""
    from parity.stats import MIN_STEADY

    return min(steps, 1 + steps // 4 + MIN_STEADY)


def phases(c: Costed, processes: int) -> list[PhaseCost]:
    """Every phase of the comparison with ``processes`` a side, costed (none cut)."""
    load = c.cost.load_s
    out: list[PhaseCost] = []
    cpu = c.cost.step_s
    step64 = c.cost.precision_step_s.get(FP64, cpu * c.cost.dtype_ratio.get("float64", 2.0))
    full = c.steps + c.cost.finish_steps  # a full run's steps and its end's work
    # a reference runs the steps its outputs need (``StepCost.reference_steps``), its end
    # and the probe
    whole = (c.cost.reference_steps or c.steps) + c.cost.finish_steps + PROBE_STEPS
    summaries = c.cost.summary_s
    reference = cost.process_s(load, whole, step64) + summaries
    out.append(_phase("fp64 reference", reference, c.cached.reference))
    if c.expected is not None:
        e = step_s(c.cost, c.expected) or cpu
        name = f"expected-error run ({c.expected})"
        out.append(_phase(name, cost.process_s(load, whole, e) + summaries, c.cached.expected))
    n = timing_steps(c.steps)
    for i, (role, side) in enumerate((("baseline", c.baseline), ("target", c.target))):
        s = step_s(c.cost, side)
        quality = full + (c.cost.forced_steps if role == "target" else 0.0)
        out.append(
            _phase(f"{role} quality run", None if s is None else cost.process_s(load, quality, s))
        )
        probe = None if s is None else PROBE_FIXED_S + PROBE_STEPS * s + summaries
        out.append(_phase(f"{role} {PROBES}", probe, c.cached.probe[i]))
        scan = None if s is None else SCAN_FIXED_S + SCAN_STEPS * s
        out.append(_phase(f"{role} op scan", scan, c.cached.scan[i]))
        more = processes - 1
        if more:  # the quality run is the first process
            name = f"{role} timing processes ({more} x {n} steps)"
            out.append(_phase(name, None if s is None else more * cost.process_s(load, n, s)))
    if c.plan.compliance:
        s = step_s(c.cost, c.target)
        out.append(_phase(COMPLIANCE, None if s is None else 2 * cost.process_s(load, n, s)))
    return out


def _phase(name: str, seconds: float | None, cached: bool = False) -> PhaseCost:
    basis = "cached: a copy" if cached else "estimated" if seconds is not None else "not estimated"
    return PhaseCost(name=name, seconds=0.0 if cached else seconds, basis=basis, cached=cached)


def plan(c: Costed) -> Estimate:
    """The estimate, with what the budget cuts (see the module) and the rounds it leaves
    room for; an ``OptionError`` where even the least comparison is over the budget."""
    est = _within_budget(c)
    if c.plan.repeats is None:  # the rounds go on while the budget holds them
        est = replace(est, rounds_s=cost.left_s(est.planned_s, est.budget_s))
    return est


def _within_budget(c: Costed) -> Estimate:
    from parity.stats import MIN_PROCESSES

    full = phases(c, MIN_PROCESSES)
    full_s = sum(p.seconds or 0.0 for p in full)
    budget = c.plan.budget_s
    est = Estimate(
        phases=tuple(full),
        basis=basis(c.cost),
        budget_s=budget,
        processes=MIN_PROCESSES,
        full_budget_s=float(cost.holding(full_s)),
    )
    if c.plan.repeats is not None:  # as many processes as asked, whatever they cost
        asked = phases(c, c.plan.repeats)
        return replace(est, phases=tuple(asked), processes=c.plan.repeats)
    # nothing is spent yet: the whole plan is what is next
    if cost.fits(0.0, est.planned_s, budget):
        return est
    optional, fewer = _cuts(c)
    for cut in optional:
        est = cut(est)
        if cost.fits(0.0, est.planned_s, budget):
            return est
    if cost.fits(0.0, est.planned_s, THREE_OVER * budget):
        return est  # three a side come first: over the budget, and said so
    for cut in fewer:
        est = cut(est)
        if cost.fits(0.0, est.planned_s, budget):
            return est
    if c.plan.budget_given and not cost.fits(0.0, est.planned_s, REFUSE_OVER * budget):
        raise OptionError(refusal(est))
    if not c.plan.budget_given and not cost.fits(0.0, est.planned_s, ASK_OVER_S):
        raise OptionError(unasked(est))
    return est


def _cuts(c: Costed) -> tuple[list[_Cut], list[_Cut]]:
    """The optional phases' cuts, in order, and the timing processes' (two a side, one)."""
    over = f"over --budget {c.plan.budget_s:g}"
    cuts: list[_Cut] = [
        _cutting(COMPLIANCE, f"dropped: the estimate is {over}; a larger --budget runs them"),
        _cutting(
            BASE_SCAN,
            f"skipped: the estimate is {over} (the target's op scan answers compatibility)",
        ),
        _cutting(
            PROBES,
            f"skipped: the estimate is {over} (the gates read the runs' outputs; the "
            "per-module localisation is lost)",
        ),
    ]
    from parity.stats import MIN_PROCESSES

    return cuts, [_fewer(c, k) for k in range(MIN_PROCESSES - 1, 0, -1)]


def _cutting(fragment: str, why: str) -> _Cut:
    def cut(est: Estimate) -> Estimate:
        ps = tuple(
            replace(p, cut=why) if fragment in p.name and not p.cached and p.cut is None else p
            for p in est.phases
        )
        return replace(est, phases=ps)

    return cut


def _fewer(c: Costed, processes: int) -> _Cut:
    """``processes`` a side instead of three: the timing processes' phases recosted."""

    def cut(est: Estimate) -> Estimate:
        fewer = {p.name.split(" (")[0]: p for p in phases(c, processes)}
        ps = []
        for p in est.phases:
            q = fewer.get(p.name.split(" (")[0]) if "timing processes" in p.name else None
            ps.append(p if q is None else replace(q, cut=p.cut))
        ps = [_undetermined(p, processes) for p in ps]
        return replace(est, phases=tuple(ps), processes=processes)

    return cut


def _undetermined(p: PhaseCost, processes: int) -> PhaseCost:
    if "timing processes" not in p.name or processes > 1:
        return p
    why = "dropped: only the quality runs fit the budget, so the speed is undetermined"
    return replace(p, cut=why)


def basis(cost: StepCost) -> str:
    ratios = ", ".join(f"{k} {v:.2g}x" for k, v in sorted(cost.dtype_ratio.items()))
    steps = "".join(
        f"; a step in {k} {v * 1e3:.3g} ms" for k, v in sorted(cost.precision_step_s.items())
    )
    return (
        f"a step {cost.step_s * 1e3:.3g} ms ({cost.method}), load {cost.load_s:.2f} s; a matmul "
        f"against float32's: {ratios}{steps}"
    )


def refusal(est: Estimate) -> str:
    """The one line a comparison the budget cannot hold is refused with."""
    least = est.planned_s
    return (
        f"this comparison needs about {duration(least)} at the least (a quality run a side, "
        f"the fp64 reference, the target's op scan), more than --budget {est.budget_s:g}: "
        f"run with --budget {est.full_budget_s:.0f} (about {duration(est.full_budget_s)} for "
        "three processes a side) or a smaller --size or --steps"
    )


def unasked(est: Estimate) -> str:
    """The one line a comparison over ``ASK_OVER_S`` is refused with when no budget was
    given: what it needs, and the ``--budget`` that runs it."""
    return (
        f"this comparison needs about {duration(est.planned_s)} at the least here (a quality "
        f"run a side, the fp64 reference, the target's op scan) and no --budget was given: "
        f"run with --budget {cost.holding(est.planned_s)} to measure it anyway (--budget "
        f"{est.full_budget_s:.0f} for three processes a side), or a smaller --size or --steps"
    )


def summary(est: Estimate) -> str:
    """The estimate in one line, as printed before the sides run."""
    ran = [p for p in est.phases if p.cut is None and p.seconds]
    parts = ", ".join(f"{p.name} {p.seconds:.1f} s" for p in ran)
    unknown = [p.name for p in est.phases if p.seconds is None]
    cached = [p.name for p in est.phases if p.cached]
    tail = f"; cached: {', '.join(cached)}" if cached else ""
    tail += f"; not estimated: {', '.join(unknown)}" if unknown else ""
    from parity.stats import MIN_PROCESSES

    ask = ""
    if est.processes < MIN_PROCESSES:  # what a determined speed verdict asks for
        ask = (
            f": the speed is undetermined below {MIN_PROCESSES} a side (more run if the "
            f"processes take less than estimated); --budget {est.full_budget_s:.0f} buys "
            f"{MIN_PROCESSES}"
        )
    elif not cost.fits(0.0, est.planned_s, est.budget_s):
        ask = f": {over_budget(est)}"
    more = ""
    if est.rounds_s > 0:
        more = (
            f"; then more rounds until the interval is narrow enough or the budget is spent: "
            f"about {duration(est.expected_s)} in all"
        )
    return (
        f"estimate: about {duration(est.planned_s)} for {est.processes} process(es) a side "
        f"({parts}){tail}; budget {est.budget_s:g} s{ask}{more}"
    )


def over_budget(est: Estimate) -> str:
    """Why a plan runs over its budget: three processes a side come first."""
    from parity.stats import MIN_PROCESSES

    return (
        f"{MIN_PROCESSES} processes a side come first: planned over --budget "
        f"{est.budget_s:g} (estimate: {duration(est.planned_s)}; --budget "
        f"{cost.holding(est.planned_s)} holds them)"
    )


def notes(est: Estimate, asked: int | None = None) -> list[str]:
    """A line per phase the budget cut, for the verdict (``asked``: the ``--repeats``
    given, which the budget does not plan)."""
    from parity.stats import MIN_PROCESSES

    lines = [f"{p.name}: {p.cut}" for p in est.cuts]
    over = not cost.fits(0.0, est.planned_s, est.budget_s)
    if est.processes >= MIN_PROCESSES and over and asked is None:
        lines.append(over_budget(est))
    if est.processes < MIN_PROCESSES and asked is None:
        lines.append(
            f"{est.processes} process(es) a side planned to fit --budget {est.budget_s:g} "
            f"(estimate: {duration(est.planned_s)}): the speed is undetermined; --budget "
            f"{est.full_budget_s:.0f} buys {MIN_PROCESSES} a side"
        )
    return lines


def outran(est: Estimate, notes: list[str], ran: int, took: Mapping[str, float]) -> list[str]:
    """``notes`` once the rounds ran past the ``ran`` < three a side the estimate fitted:
    its lines that planned fewer (and called the speed undetermined) give way to one
    saying what the runs took against it. ``took``: seconds each quality run took, by
    its phase's name (``baseline quality run``)."""
    from parity.stats import MIN_PROCESSES

    if ran <= est.processes or est.processes >= MIN_PROCESSES:
        return notes

    fewer = {f"{p.name}: {p.cut}" for p in est.cuts if "timing processes" in p.name}
    stale = [n for n in notes if n in fewer or f"{est.processes} process(es) a side planned" in n]
    runs = [
        f"{name} {took[name]:.1f} s against {p.seconds:.1f} s"
        for p in est.phases
        if (name := p.name) in took and p.seconds is not None and not p.cached
    ]
    said = f" ({', '.join(runs)})" if runs else ""
    done = "" if ran >= MIN_PROCESSES else f"; {MIN_PROCESSES} a side would settle the speed"
    line = (
        f"the estimate fitted {est.processes} process(es) a side in --budget "
        f"{est.budget_s:g}, but the runs took less than it said{said}: measuring went on "
        f"while the rounds as measured fitted the budget, to {ran} a side{done}"
    )
    return [n for n in notes if n not in stale] + [line]


# -- a comparison's estimate, and the plan it leaves -------------------------------------------


def expected_side(target: SideSpec) -> SideSpec | None:
    """The expected-error run's side where the target's spec names a reduced precision
    (None: fp32, or the target is that run's own side)."""
    if target.precision == "fp32" and not target.emulate:
        return None
    from parity.devices.names import autocast_policy

    policy = autocast_policy(target.device) if target.precision != "fp32" else None
    side = SideSpec(
        device="cpu",
        precision=target.precision,
        emulate=target.emulate,
        autocast=policy if policy not in (None, "cpu") else None,
    )
    return None if side == target else side


def for_request(request: CompareRequest, template: JobTemplate, cache: Path) -> Estimate | None:
    """The comparison's estimate and plan (None where the freeze job measured nothing);
    an ``OptionError`` where the budget cannot hold even the least of it."""
    from parity.cache import expected_cached, reference_cached
    from parity.runner.probecache import has_cached

    if template.cost is None or not template.description.steps:
        return None
    fp = template.fingerprint
    expected = expected_side(request.target)
    sides = (request.baseline, request.target)
    cached = Cached(
        reference=reference_cached(fp, cache),
        expected=expected_cached(fp, expected, cache),
        probe=tuple(has_cached(fp, str(s), "numerics probe") for s in sides),  # type: ignore[arg-type]
        scan=tuple(has_cached(fp, str(s), "scan") for s in sides),  # type: ignore[arg-type]
    )
    costed = Costed(
        cost=template.cost,
        steps=template.description.steps,
        baseline=request.baseline,
        target=request.target,
        expected=expected,
        plan=request.measure,
        cached=cached,
    )
    return plan(costed)


def planned(measure: MeasurePlan, est: Estimate | None) -> MeasurePlan:
    """The measuring plan the estimate leaves: no compliance runs where it cut them; where
    fewer than three a side fit, its processes a side come first, and more only while
    the rounds as measured fit the budget (the estimate is a guess made before anything
    ran; the budget's stopping rule costs each next round from the rounds that ran)."""
    if est is None:
        return measure
    if any(COMPLIANCE in p.name for p in est.cuts):
        measure = replace(measure, compliance=False)
    from parity.stats import MIN_PROCESSES

    if est.processes < min(MIN_PROCESSES, measure.max_repeats):
        measure = replace(measure, planned_rounds=est.processes)
    return measure


def skipped(est: Estimate | None, role: str) -> tuple[str, ...] | None:
    """The first-repeat probes the estimate cut for ``role`` (``TimingPlan.skip``)."""
    if est is None:
        return None
    names = {f"{role} {PROBES}": "numerics probe", f"{role} op scan": "scan"}
    return tuple(names[p.name] for p in est.cuts if p.name in names) or None


def processes_s(est: Estimate) -> dict[str, float]:
    """Each kind of process the plan runs and its estimated seconds: the fp64 reference,
    the expected-error run, a side's first process (its quality run with the numerics
    probe and the op scan the plan kept) and one of its timing processes."""
    out: dict[str, float] = {}
    for p in est.phases:
        if p.cut is not None or p.cached or p.seconds is None:
            continue
        role = p.name.split(" ")[0]
        if "timing processes" in p.name:  # "ROLE timing processes (K x N steps)"
            k = int(p.name.split("(")[1].split(" x ")[0])
            out[f"a {role} timing process"] = p.seconds / max(1, k)
        elif role in ("baseline", "target") and COMPLIANCE not in p.name:
            key = f"the {role}'s first process"
            out[key] = out.get(key, 0.0) + p.seconds
        elif COMPLIANCE in p.name:
            out["a compliance run"] = p.seconds / 2
        else:
            out[f"the {p.name}"] = p.seconds
    return out


def process_timeout(est: Estimate | None, measure: MeasurePlan) -> float:
    """The per-process timeout the plan runs with: a given ``--timeout`` as given, the
    default raised to ``TIMEOUT_OVER`` times the longest process estimated (a process
    estimated at 20 minutes is not killed at 15). An ``OptionError`` before anything runs
    where a given ``--timeout`` is under a process's estimate, naming it and the
    ``--timeout`` that holds it."""
    longest = max(processes_s(est).items(), key=lambda kv: kv[1], default=None) if est else None
    if longest is None:
        return measure.timeout_s
    name, seconds = longest
    holds = math.ceil(seconds * TIMEOUT_OVER)
    if not measure.timeout_given:
        return max(measure.timeout_s, float(holds))
    if seconds > measure.timeout_s:
        raise OptionError(
            f"{name} is estimated at about {duration(seconds)}, more than --timeout "
            f"{measure.timeout_s:g} (seconds per process): run with --timeout {holds}, or "
            "a smaller --size or --steps"
        )
    return measure.timeout_s


def timeout_note(est: Estimate | None, timeout_s: float) -> str:
    """The line that says the default timeout followed the estimate."""
    found = processes_s(est) if est is not None else {}
    name, seconds = max(found.items(), key=lambda kv: kv[1], default=("a process", 0.0))
    return (
        f"the per-process timeout is {timeout_s:.0f} s, not the default: {name} is estimated "
        f"at about {duration(seconds)} (--timeout sets it)"
    )


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"
