"""The words for each finding of the verdict: one template per code, used by every view.

The judge returns findings (``parity.model.findings``): a code, its figures and a
severity. Here each code gets what it says and, where something settles it, the action
that does; the terminal, Markdown, HTML and the summary screen show these strings and
never compose their own. A code without words here is said by its code and figures, so a
finding is never dropped (``tests/report/test_words.py`` keeps every code the judge
emits covered).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from parity.model.checks import SlopeGate
from parity.model.codec import Json, decode
from parity.model.fair import (
    PIPELINE,
    SHAPE_FACTOR,
    SIZES,
    SLO_CONFIDENCE,
    SPEED_FLAGS,
    Fit,
    MemoryPart,
    Optimisation,
    Representativeness,
    ShapeRow,
    SideFit,
    SloCheck,
)
from parity.model.findings import Finding
from parity.model.quality import (
    EXPLAINED_FLOOR,
    TRAJECTORY_RULE,
    Localisation,
    NumericsSection,
    Quality,
    ReferenceNote,
    TrajectoryCheck,
)
from parity.model.reports import CurveBest
from parity.model.verdict import Gate, Sensitivity, UnprovenItem

Figures = Mapping[str, Json]
Say = Callable[[Figures], str]


@dataclass(frozen=True)
class Words:
    """What a finding says in full, in brief (the summary screen; None: in full), and
    the action that settles it (None: nothing to do)."""

    says: Say
    brief: Say | None = None
    action: Say | None = None


def _num(f: Figures, key: str) -> float:
    value = f.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def _int(f: Figures, key: str) -> int:
    value = f.get(key)
    return int(value) if isinstance(value, int | float) else 0


def _str(f: Figures, key: str) -> str:
    value = f.get(key)
    return "" if value is None else str(value)


def _threads_ran(f: Figures) -> str:
    threads = f.get("threads")
    counts = dict(threads) if isinstance(threads, dict) else {}
    ran = [(role, n) for role, n in counts.items() if isinstance(n, int)]
    if len(ran) == 2 and ran[0][1] == ran[1][1]:
        return f"each side ran {ran[0][1]} intra-op threads"
    (first, n), *rest = ran or [("target", 0)]
    return f"the {first} ran {n} intra-op threads" + "".join(f" and the {r} {m}" for r, m in rest)


def _contention_effect(f: Figures) -> str:
    if f.get("half_width_rel") is None:
        return "measuring goes on"
    effect = f"the interval is ±{_num(f, 'half_width_rel'):.1%}"
    stalled = _int(f, "stalled")
    if stalled:
        effect += (
            f"; in {stalled} of {_int(f, 'processes')} processes the threads stalled each "
            "other, taking a millisecond or more to share a small add where the rest took "
            "microseconds"
        )
    return effect


def _contention(f: Figures) -> str:
    return (
        f"other processes held {_num(f, 'share'):.0%} of the {_int(f, 'cores')} cores while "
        f"{_threads_ran(f)} on them: a side's threads wait for each other at every parallel "
        "region, and one descheduled stalls the rest, so process times scatter "
        f"({_contention_effect(f)})"
    )


def _contention_brief(f: Figures) -> str:
    return (
        f"busy cores widened the interval: other processes held {_num(f, 'share'):.0%} of "
        f"the {_int(f, 'cores')} cores while {_threads_ran(f)}"
    )


def _one_thread(f: Figures) -> str:
    return (
        f"an idle machine narrows it, or one thread a side (--baseline "
        f"{_str(f, 'single_baseline')} --target {_str(f, 'single_target')}: a one-thread "
        "comparison, not this one)"
    )


def _ratio_at(f: Figures, key: str) -> str | None:
    ci = f.get(key)
    if not isinstance(ci, list) or len(ci) != 3:
        return None
    ratio, low, high = (float(x) if isinstance(x, int | float) else 0.0 for x in ci)
    return f"{ratio:.3f} [{low:.3f}, {high:.3f}]"


def _placements(f: Figures) -> str:
    stalled = bool(f.get("stalled"))
    names = ("the others", "the stalled ones") if stalled else ("the quicker", "the slower")
    quick, slow = _int(f, "quick"), _int(f, "slow")
    quick_ns, slow_ns = _num(f, "quick_ns"), _num(f, "slow_ns")
    if stalled:
        seen = (
            f"in {slow} processes the threads stalled each other: they took "
            f"{slow_ns / 1e6:.1f} ms to share a small add, against {quick_ns / 1e3:.1f} µs "
            f"in the other {quick} (on a busy machine, a side's threads queued behind other "
            "work for the process's life)"
        )
        mix = "; the interval over all processes holds them"
    else:
        seen = (
            f"the host placed the threads two ways while measuring: they shared a small add "
            f"in {quick_ns / 1e3:.1f} µs in {quick} processes and in {slow_ns / 1e3:.1f} µs "
            f"in {slow} (on a virtual machine, cores that share a cache or do not, which "
            "nothing in it controls)"
        )
        mix = (
            "; the interval over all processes holds the mix of the two this run drew, and "
            "a machine that keeps one placement gives that placement's ratio"
        )
    moved = " and ".join(
        f"the {role}'s {_num(f, f'{role}_shift'):.2f}x"
        for role in ("baseline", "target")
        if f.get(f"{role}_shift") is not None
    )
    ratios = " and ".join(
        f"{said} over {name}"
        for name, key in zip(names, ("quick_ratio", "slow_ratio"), strict=True)
        if (said := _ratio_at(f, key)) is not None
    )
    return (
        f"{seen}; the steps of {names[1]} against {names[0]}: {moved}"
        + (f"; the ratio was {ratios}" if ratios else "")
        + mix
    )


def _placements_brief(f: Figures) -> str:
    if f.get("stalled"):
        return (
            f"in {_int(f, 'slow')} processes the threads stalled each other "
            f"({_num(f, 'slow_ns') / 1e6:.1f} ms to share a small add): their steps moved with it"
        )
    return (
        "the host placed the threads two ways while measuring, and the steps moved with it: "
        "the ratio is this run's mix of the two"
    )


def _verbatim(f: Figures) -> str:
    return _str(f, "text")


def _names(f: Figures, key: str) -> str:
    value = f.get(key)
    return ", ".join(map(str, value)) if isinstance(value, list) else _str(f, key)


def _list(f: Figures, key: str) -> list[str]:
    value = f.get(key)
    return [str(x) for x in value] if isinstance(value, list) else []


def _probe_cut(f: Figures) -> str:
    roles = _list(f, "roles")
    many = len(roles) > 1
    return (
        f"no module is named: the {' and '.join(roles)}'s numerics "
        f"probe{'s were' if many else ' was'} {_str(f, 'why')}"
    )


def _probe_budget(f: Figures) -> str:
    return (
        f"--budget {_num(f, 'budget_s'):.0f} runs {'them' if len(_list(f, 'roles')) > 1 else 'it'}"
    )


def _withheld_quality(f: Figures) -> str:
    return f"no speed or cost verdict: the target fails quality ({_names(f, 'failing')})"


def _withheld_emulated(f: Figures) -> str:
    return (
        f"numerics preview: {_names(f, 'sides')} emulates a precision (+emulate rounds "
        "matmul inputs in a Python dispatch mode, which slows a step), so its speed and "
        "cost say nothing about a device; no speed or cost verdict"
    )


#: each check on the speed claim by its code (``ComplianceCheck.name``); a verdict of
#: schema 2 or older named them by these words, which pass through as they are
CHECKS: dict[str, str] = {
    "speed.reseeded": "re-seeded run within process variation",
    "speed.same-input": "identical input not faster than process variation",
    "speed.pace": "machine pace held while measuring",
    "speed.load": "the sides' processes under one load",
}
#: the compliance runs by their key (``SideRuns.compliance``)
RUNS: dict[str, str] = {"reseeded": "the re-seeded run", "same-input": "the identical-input run"}


def check(name: str) -> str:
    """What a check on the speed claim is, by its code."""
    return CHECKS.get(name, name)


def _checks(f: Figures, key: str) -> str:
    value = f.get(key)
    names = [str(x) for x in value] if isinstance(value, list) else [_str(f, key)]
    return ", ".join(check(n) for n in names)


def _seen(f: Figures) -> str:
    run = _str(f, "run")
    return f"{RUNS.get(run, run)}'s median step was {_num(f, 'ratio'):.3f}x the target's"


def _run_judged(f: Figures) -> str:
    passed, low = bool(f.get("passed")), _num(f, "low")
    if f.get("sided") == "lower":
        where, what = ("not below" if passed else "below"), "lower prediction bound"
        bounds = f"{low:.3f}"
    else:
        where, what = ("within" if passed else "outside"), "prediction interval"
        bounds = f"{low:.3f}-{_num(f, 'high'):.3f}"
    return (
        f"{_seen(f)}, {where} the {bounds} that process-to-process variation explains "
        f"({_num(f, 'level') * 100:g}% {what} from the {_int(f, 'processes')} processes of "
        "both sides)"
    )


def _pace_change(f: Figures) -> str:
    why = (
        "the processes' thread handoff figures show the host placing their cores two ways"
        if f.get("placements_seen")
        else "a virtual machine's host can do that with no other process here to show it"
    )
    moved = (
        f"after {_int(f, 'processes')} processes a side: the baseline's step time went "
        f"{_num(f, 'baseline_shift'):.2f}x and the target's {_num(f, 'target_shift'):.2f}x "
        "at once"
    )
    if f.get("shared"):
        said = f"the machine's pace changed {moved} ({why})"
    else:
        said = (
            f"the ratio changed {moved}: the machine changed how one side runs and not the "
            f"other ({why}; so can a side's own state that outlives its processes)"
        )
    said += f"; the ratio was {_ratio_at(f, 'before')} before and {_ratio_at(f, 'after')} after"
    if not f.get("held"):
        return said + (
            "; one ratio does not describe this run: measure again on a steadier machine, "
            "or from the part of the run whose pace is the one you deploy on"
        )
    widened = (
        "each round's two processes ran at one pace, which the paired interval compares"
        if f.get("paired")
        else "the interval over the whole run is wider for the change"
    )
    return f"{said}; it held, and {widened}"


def _load_shift(f: Figures) -> str:
    said = (
        f"the {_str(f, 'more')}'s processes waited longer for a core (other work on the "
        f"machine: {_num(f, 'target_waited'):.2f} s a second for the target's, "
        f"{_num(f, 'baseline_waited'):.2f} for the baseline's) and their steps followed the "
        f"wait (t {_num(f, 'slope_t'):.1f}): at equal load the ratio is "
        f"{_ratio_at(f, 'equal_load')} against {_ratio_at(f, 'plain')}"
    )
    if f.get("held"):
        return said + "; the interval is widened to hold both"
    return said + "; one ratio does not describe this run: measure again on a quiet machine"


def _waited(f: Figures) -> str:
    said = (
        f"the processes waited for a core {_num(f, 'baseline'):.2f} s a second (baseline) "
        f"and {_num(f, 'target'):.2f} s (target) while stepping: other work on the "
        "machine; a wait both sides pay adds to every step alike and moves the ratio "
        "toward 1"
    )
    fixed, fastest = _ratio_at(f, "fixed"), _ratio_at(f, "fastest")
    if fixed is None and fastest is None:  # a verdict from before it was said
        return said + ", so a quiet machine's ratio may lie outside this interval"
    said += f"; against the plain {_ratio_at(f, 'plain')}, the ratio is"
    readings = []
    if fixed is not None:
        readings.append(
            f" {fixed} with the {_num(f, 'fixed_s') * 1e3:.3g} ms a step every process "
            "waited taken off"
        )
    if fastest is not None:
        readings.append(f" {fastest} over each process's fastest step (the least slowed)")
    said += " and".join(readings)
    if f.get("widened"):
        return said + "; the interval is widened to hold them"
    return said + ", within the interval"


#: a tuning setting the judge names by a code (the rest are named as they are)
SETTINGS: dict[str, str] = {
    "tuning.neuron-determinism": "non-deterministic kernels and Adaptive Eager op fusion (neuron)"
}
#: what an optimisation on each side does to the ratio (target step / baseline step)
BIAS: dict[str | None, str] = {
    "baseline": "raises the ratio: flatters the baseline",
    "target": "lowers the ratio: flatters the target",
    None: "either way: the sides differ in kind",
}


def setting(name: str) -> str:
    """A tuning setting, by its name or code."""
    return SETTINGS.get(name, name)


def bias(o: Optimisation) -> str:
    """Which way a setting one side has moves the target/baseline ratio."""
    return BIAS[o.side]


def _asymmetric(f: Figures) -> str:
    tuned = f.get("tuned")
    first = (
        f"{tuned} tuned, {'target' if tuned == 'baseline' else 'baseline'} first-run"
        if tuned in ("baseline", "target")
        else "the sides are tuned differently"
    )
    named = ", ".join(setting(s) for s in _list(f, "settings"))
    return f"{first} ({named}): the ratio is not a hardware result"


def _shapes(f: Figures) -> str:
    if "baseline" not in f:
        return "the sides' shapes differ"
    return f"shapes differ: {f.get('baseline')} vs {f.get('target')}"


def _curve_lengths(f: Figures) -> str:
    if "fp64" not in f:
        return f"curve lengths differ: {_int(f, 'baseline')} vs {_int(f, 'target')} steps"
    return (
        "the curves' lengths differ (baseline, target, fp64): "
        f"{_int(f, 'baseline')}, {_int(f, 'target')} and {_int(f, 'fp64')} steps"
    )


def _drift(f: Figures) -> str:
    return (
        f"from step {_int(f, 'step')} the comparator's loss differs from fp64 by more than "
        f"{_num(f, 'drift'):g} (relative): training amplifies rounding until the runs drift "
        f"apart, so one step's error is noise; from there the mean error over windows of "
        f"{_int(f, 'window')} steps is gated against {_num(f, 'k'):g}x the comparator's mean"
    )


def _at(f: Figures) -> str:
    """Where a value first went non-finite: a step, or after the steps."""
    return f"step {_int(f, 'step')}" if f.get("step") is not None else "after the steps (finish)"


def undecided_label(f: Figures) -> str:
    """A gate not decided, with its evidence: the decisive rows it had and needed, and the
    ``--steps`` that would decide it where more steps would."""
    if f.get("decisive") is None:
        return _str(f, "name")
    label = f"{_str(f, 'name')} ({_int(f, 'decisive')} decisive rows, {_int(f, 'required')} needed"
    if f.get("steps"):
        label += f": about --steps {_int(f, 'steps')} decides it"
    elif f.get("output"):
        label += f": {_str(f, 'output')} over more rows decides it"
    return label + ")"


def _undecided(f: Figures) -> str:
    entries = f.get("undecided")
    return ", ".join(
        undecided_label(e)
        for e in (entries if isinstance(entries, list) else ())
        if isinstance(e, dict)
    )


def undecided(q: Quality) -> list[str]:
    """The quality section's gates not decided, each with its evidence (an older
    verdict's said it in the name)."""
    return [undecided_label(e) for e in q.undecided_figures()]


#: every code the judge emits, with its words
WORDS: dict[str, Words] = {
    "speed.unreliable": Words(
        says=lambda f: f"the speed claim is unreliable: {_checks(f, 'failed')} failed",
        action=lambda f: "rerun on an idle machine",
    ),
    "decision.withheld-quality": Words(
        says=_withheld_quality,
        action=lambda f: (
            "find the cause in the quality and numerics sections "
            "(parity explain RUN numerics names the first diverging module)"
        ),
    ),
    "decision.workload-fails": Words(
        says=lambda f: (
            f"the workload fails on its own: {_str(f, 'type')} in phase '{_str(f, 'phase')}' "
            f"at {_str(f, 'source')}, alike on the baseline and the target"
        ),
        action=lambda f: "fix the workload (the target is not at fault)",
    ),
    "decision.withheld-emulated": Words(
        says=_withheld_emulated,
        action=lambda f: "measure speed and cost on the device itself",
    ),
    # what a verdict written before findings (schema 1) said, kept as it was said
    "decision.withheld-note": Words(says=_verbatim),
    "speed.contention": Words(says=_contention, brief=_contention_brief, action=_one_thread),
    "speed.waited": Words(
        says=_waited,
        brief=lambda f: (
            f"busy cores: the processes waited for a core {_num(f, 'baseline'):.2f} / "
            f"{_num(f, 'target'):.2f} s a second"
        ),
        action=lambda f: "measure again on a quiet machine",
    ),
    "speed.thread-placements": Words(
        says=_placements,
        brief=_placements_brief,
        action=lambda f: "measure on a machine that keeps one placement (a dedicated host)",
    ),
    "speed.note": Words(says=_verbatim),
    "speed.run-failed": Words(says=lambda f: f"the run failed: {_str(f, 'reason')}"),
    "speed.run-no-samples": Words(says=lambda f: "no steady-state samples"),
    "speed.run-not-judged": Words(
        says=lambda f: (
            f"{_seen(f)}; not judged: with one process per side the variation between "
            "processes is unknown"
        ),
        action=lambda f: "run at least 2 repeats per side",
    ),
    "speed.run-judged": Words(says=_run_judged),
    "speed.pace-change": Words(says=_pace_change),
    "speed.load-shift": Words(says=_load_shift),
    "tuning.asymmetric": Words(says=_asymmetric),
    # -- quality checks: why a check has no figure to gate, or how it was read --------------
    "quality.shapes-differ": Words(says=_shapes),
    "quality.not-finite": Words(says=lambda f: "the target's output holds NaN or inf"),
    "quality.no-reference": Words(
        says=lambda f: "no fp64 reference: cosine similarity with the baseline"
    ),
    "quality.integers-reported": Words(says=lambda f: "integer outputs are reported, not gated"),
    "quality.baseline-zeros": Words(says=lambda f: "the baseline's output is all zeros"),
    "quality.curve-lengths": Words(says=_curve_lengths),
    "quality.loss-not-finite": Words(
        says=lambda f: (
            f"the {_str(f, 'role')}'s loss is not finite"
            + (f" at step {_int(f, 'step')}" if f.get("step") is not None else "")
        )
    ),
    "quality.one-repeat": Words(says=lambda f: "one repeat: run --repeats 2 to check"),
    "quality.repeat-shape": Words(says=lambda f: f"{_str(f, 'output')} changed shape"),
    "quality.repeat-shorter": Words(
        says=lambda f: (
            f"the losses of the first {_int(f, 'steps')} steps (a timing process ran "
            f"{_int(f, 'steps')} of {_int(f, 'of')}); outputs not compared"
        )
    ),
    "quality.repeat-outputs": Words(
        says=lambda f: f"the outputs the timing process hands over: {_names(f, 'outputs')}"
    ),
    "quality.reference-not-finite": Words(
        says=lambda f: (
            f"the fp64 reference's loss is not finite from step {_int(f, 'step')}: nothing to gate"
        )
    ),
    "quality.no-comparator": Words(
        says=lambda f: f"the baseline's loss is not finite at step {_int(f, 'step')}: no comparator"
    ),
    "quality.drift": Words(says=_drift),
    "quality.nonfinite-unknown": Words(
        says=lambda f: (
            f"first not finite at {_at(f)}; the module is unknown "
            f"({_str(f, 'why') or 'no replay was recorded'})"
        )
    ),
    "quality.nonfinite-update": Words(
        says=lambda f: (
            f"at {_at(f)} every module's output was finite and parameter "
            f"{_str(f, 'parameter')} was not after the update: the loss, the backward or the "
            "optimizer"
        )
    ),
    "quality.nonfinite-module": Words(
        says=lambda f: f"first not finite at {_at(f)}, in the output of module {_str(f, 'module')}"
    ),
    # agreement with the baseline: tokens, top-1 and cosine
    "quality.tokens-no-margins": Words(
        says=lambda f: "no logits margins recorded: the differences are reported, not gated"
    ),
    "quality.tokens-near-ties": Words(
        says=lambda f: "every difference is a near-tie flip (greedy decoding; not a fault)"
    ),
    "quality.tokens-flip": Words(
        says=lambda f: (
            f"{_int(f, 'flips')} token(s) differ where the baseline's top-2 margin is at least "
            f"{_num(f, 'margin'):.3g}"
        )
    ),
    "quality.top1-fails-early": Words(
        says=lambda f: (
            f"{_int(f, 'flips')} of {_int(f, 'decisive')} decisive rows flip: agreement at most "
            f"{_num(f, 'bound'):.1%} (one-sided {_num(f, 'level'):.0%} bound), under "
            f"{_num(f, 'threshold'):.0%}; failed before the {_int(f, 'required')} rows a pass needs"
        )
    ),
    "quality.top1-not-decided": Words(
        says=lambda f: (
            f"not decided: {_int(f, 'decisive')} decisive rows, {_int(f, 'required')} needed to "
            f"tell {_num(f, 'threshold'):.0%} from chance"
        )
    ),
    "quality.one-class": Words(says=lambda f: "one class: nothing to rank"),
    "quality.no-every-argmax": Words(
        says=lambda f: "the sides recorded no comparable arg-max at every position"
    ),
    "quality.sketches-differ": Words(says=lambda f: "the sides' logits sketches differ in shape"),
    "quality.cosine-read": Words(
        says=lambda f: (
            (
                "exact"
                if f.get("sketch") is None
                else f"read from {_int(f, 'sketch')}-bucket sketches of each row"
            )
            + ("" if f.get("finite") else "; a row was not finite")
        )
    ),
    # the quality section and its gate
    "quality.one-side-only": Words(says=lambda f: "present on one side only"),
    "quality.fp64-decides": Words(says=lambda f: "reported; the fp64 reference gates decide"),
    "quality.outside": Words(says=lambda f: f"outside tolerance: {_names(f, 'failing')}"),
    "quality.within": Words(
        says=lambda f: (
            "within tolerance"
            + (
                f"; not decided: {_undecided(f)} (the same outputs' error bounds decide)"
                if f.get("undecided")
                else ""
            )
        )
    ),
    "quality.not-decided": Words(
        says=lambda f: f"not decided: {_undecided(f)}" if f.get("undecided") else "no gate decided"
    ),
    # -- end of quality checks ----------------------------------------------------------------
    "slo.within": Words(
        says=lambda f: f"every limit within its 95% upper bound: {_names(f, 'limits')}"
    ),
    "numerics.probe-cut": Words(says=_probe_cut, action=_probe_budget),
    "cost.basis-time-to-loss": Words(says=lambda f: f"time to loss {_num(f, 'loss'):g}"),
    "cost.basis-steps": Words(says=lambda f: f"{_int(f, 'steps')} steps (measured step times)"),
    "cost.basis-run": Words(says=lambda f: "the measured run"),
    "cost.unpriced": Words(
        says=lambda f: f"no price for the {' and '.join(_list(f, 'missing'))}",
        action=lambda f: (
            "pass "
            + " ".join(f"--price {m}=DOLLARS_PER_HOUR[:ACCELERATORS]" for m in _list(f, "missing"))
            + " or add it to the plan"
        ),
    ),
    "cost.no-basis": Words(
        says=lambda f: "a side has no measured cost basis (no successful run or throughput)"
    ),
}

#: how a section was made, by the code the judge gives it
METHODS: dict[str, str] = {
    "tuning.resolved-settings": (
        "from each side's resolved settings: torch.compile and its backend, autocast "
        "precision, the matmul and convolution formats (TF32), threads, deterministic "
        "algorithms, processes and batch per device, and device flags that are speed "
        f"optimisations ({', '.join(SPEED_FLAGS)}) where both sides report them; a setting "
        "neither records (CUDA graphs or fused attention inside a workload that does not "
        "report them) cannot be seen"
    ),
    "quality.direct": "target against baseline; tolerance from the lower precision of the two",
    "quality.fp64-whole-run": (
        "the whole run against an fp64 reference: losses step by step, outputs after "
        "the run and at the first forward, gradients (k x the larger of the baseline's "
        "and the expected-error run's error + tol/10, or allclose); tokens, top-1 and "
        "cosine against the baseline; non-finite values"
    ),
    "quality.fp64-first-forward": (
        "outputs and gradients against an fp64 reference (k x baseline error + tol/10, "
        "or allclose); loss curve against the baseline"
    ),
    "compat.op-scan": (
        "each side's op scan (ops.json) after its timed steps, or after its failure; "
        "fallbacks are what the backend reports plus outputs found on another device"
    ),
}


def method(code: str) -> str:
    """How a section was made, by its code (an older verdict's sentence as it is)."""
    return METHODS.get(code, code)


class Found(Protocol):
    """A part of the verdict that says what it found by a finding, or (an older verdict's,
    or one not converted) by a sentence."""

    @property
    def finding(self) -> Finding | None: ...

    @property
    def detail(self) -> str | None: ...


def detail(c: Found) -> str | None:
    """What a quality check (or a side's determinism) found: its finding's words, or its
    sentence (None: neither)."""
    return says(c.finding) if c.finding is not None else c.detail


def trajectory_rule(c: TrajectoryCheck) -> str:
    """The loss trajectory's step rule, with its check's figures (an older verdict's
    sentence as it is)."""
    if c.rule != TRAJECTORY_RULE:
        return c.rule
    return (
        f"each step: |target - fp64| <= {c.k:g}x the comparator's largest error so far "
        f"+ tol/10, or allclose: <= 2 tol |fp64| (tol {c.tolerance or 0.0:g})"
    )


def drift(c: TrajectoryCheck) -> str | None:
    """Why the trajectory's windowed mean is gated from a step on (None: it is not)."""
    return says(c.drift) if c.drift is not None else c.drift_reason


def gate(g: Gate) -> str:
    """What a gate found: its finding's words, or the sentence of a gate that has none."""
    return says(g.finding) if g.finding is not None else g.detail or ""


def sensitivity(s: Sensitivity) -> str:
    """The cost ratio over the speed ratio's interval."""
    return (
        f"over the speed ratio's {s.confidence:.0%} interval the target costs "
        f"{s.cost_ratio_low:.2f}x to {s.cost_ratio_high:.2f}x the baseline; each 10% on the "
        "target's price moves that by 10%"
    )


def _fallback(finding: Finding) -> str:
    if finding.code.endswith(".note"):  # an older verdict's sentence, as it was
        return _verbatim(finding.figures)
    figures = ", ".join(f"{k} {v}" for k, v in finding.figures.items())
    return finding.code + (f" ({figures})" if figures else "")


def says(finding: Finding) -> str:
    """The finding in full, with the action that settles it."""
    words = WORDS.get(finding.code)
    if words is None:
        return _fallback(finding)
    text = words.says(finding.figures)
    return text + (f"; {words.action(finding.figures)}" if words.action else "")


def brief(finding: Finding) -> str:
    """The finding in a line or two for the summary screen."""
    words = WORDS.get(finding.code)
    if words is None:
        return _fallback(finding)
    return (words.brief or words.says)(finding.figures)


def action(finding: Finding) -> str | None:
    """What settles the finding (None: nothing to do, or no words for it)."""
    words = WORDS.get(finding.code)
    return words.action(finding.figures) if words is not None and words.action else None


# -- the fair-comparison sections: latency limits, workload shape, fit at production size --


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def _limit(f: Figures) -> str:
    """What one latency limit found on one side, from its figures (``SloCheck.figures``)."""
    pct, n, need = _int(f, "percentile"), _int(f, "n"), _int(f, "needed")
    limit_s, status = _num(f, "limit_s"), _str(f, "status")
    bound = f"{_str(f, 'metric')}_p{pct} <= {_time(limit_s)}"
    if status == "unmeasured":
        return f"{bound}: not measured (the workload reports no {_str(f, 'metric')} latency)"
    value, upper = _num(f, "value_s"), f.get("upper_s")
    figure = f"p{pct} {_time(value)} over {n} samples"
    if status == "fail":
        said = f"{figure}: over the limit by {value / limit_s:.3g}x"
    elif status == "pass":
        said = f"{figure}, 95% upper bound {_time(_num(f, 'upper_s'))}: within the limit"
    elif upper is None:
        said = (
            f"{figure}: within the limit, but unproven: a p{pct} needs at least {need} samples "
            f"(1 - q^n >= {SLO_CONFIDENCE:g}), {need - n} more"
        )
    else:
        said = f"{figure}: its 95% upper bound {_time(_num(f, 'upper_s'))} is over the limit"
    return f"{bound}: {said}"


def slo_check(c: SloCheck) -> str:
    """What one latency limit found on one side (an older verdict's sentence as it was)."""
    return c.detail if c.detail is not None else _limit(c.figures())


def _limits(f: Figures) -> str:
    checks = f.get("checks")
    return (
        "; ".join(_limit(c) for c in checks if isinstance(c, dict))
        if isinstance(checks, list)
        else ""
    )


def curve_best(b: CurveBest) -> str:
    """A curve's largest batch within every latency limit on a side."""
    if b.summary is not None:
        return b.summary
    if b.batch_size is None:
        return "no batch size meets every limit"
    goodput = (
        f"{b.goodput_per_s:.4g} requests/s" if b.goodput_per_s is not None else "no throughput"
    )
    price = b.usd_per_1k_requests
    cost = f", ${price:.4g} per 1k requests" if price is not None else ", no price"
    return f"largest batch within every limit: {b.batch_size} ({goodput}{cost})"


WORDS |= {
    "slo.outside": Words(says=_limits),
}
METHODS |= {
    "slo.order-statistic": (
        "a limit passes when the 95% upper confidence bound of its percentile (an order "
        "statistic: the smallest X(k) of n samples with P(Binomial(n, q) <= k-1) >= 0.95) is "
        "within it; that needs n >= ln(0.05)/ln(q) samples: 5 for p50, 29 for p90, 299 for "
        "p99; fewer samples fail as unproven"
    ),
}


def _fraction(name: str, fraction: float) -> str:
    """``parameters 0.31% of production``, ``batch_size 1/32 of production``, ``2x``."""
    if fraction == 1:
        return f"{name} as in production"
    if fraction > 1:
        return f"{name} {fraction:.3g}x production"
    ratio = Fraction(fraction).limit_denominator(64)
    if ratio.numerator == 1 and abs(float(ratio) - fraction) < 1e-12:
        return f"{name} 1/{ratio.denominator} of production"
    return f"{name} {fraction * 100:.2g}% of production"


def _shape_row(f: Figures) -> str:
    """One dimension of the workload's shape against production (``ShapeRow.figures``)."""
    name, shown, production = _str(f, "name"), _str(f, "measured"), f.get("production")
    if name == PIPELINE:
        if production is None:
            return f"data pipeline {shown}"
        verb = "measured" if f.get("within") else "not measured"
        return f"data pipeline {verb} (production {production}, measured {shown})"
    if name in SIZES:
        if production is None:
            return f"{name} {shown} (production not declared)"
        if f.get("fraction") is None:
            return f"{name}: production {production}, the workload reports none"
        return _fraction(name, _num(f, "fraction"))
    if production is None:
        return f"{name} {shown}"
    return (
        f"{name} {shown}, as in production"
        if f.get("within")
        else (f"{name} {shown}, production {production}")
    )


def _rows(f: Figures) -> list[dict[str, Json]]:
    rows = f.get("rows")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _shape(f: Figures) -> str:
    """The workload's shape against production (``Representativeness.figures``)."""
    rows = _rows(f)
    if not f.get("declared"):
        measured = ", ".join(f"{_str(r, 'name')} {_str(r, 'measured')}" for r in rows)
        return f"measured shape: {measured}; not checked: no production shape declared"
    if f.get("representative"):
        return f"within {_num(f, 'factor'):g}x of production in every declared dimension"
    off = [_shape_row(r) for r in rows if r.get("within") is False]
    return "not representative: " + ", ".join(off)


def shape_row(r: ShapeRow) -> str:
    """One dimension of the shape (an older verdict's sentence as it was)."""
    return r.text if r.text is not None else _shape_row(r.figures())


def shape(r: Representativeness) -> str:
    """The workload's shape against production (an older verdict's sentence as it was)."""
    return r.summary if r.summary is not None else _shape(r.figures())


#: how to check an item not yet proven, by the code the judge gives it
HOWS: dict[str, str] = {
    "shape.declare": (
        "declare the production shape ([production] in the plan, or --production KEY=VALUE) "
        f"and measure a workload within {SHAPE_FACTOR:g}x of it in every size"
    ),
}


# -- the unproven items a comparison lists (judge/decision.py) --------------------------------
HOWS |= {
    "unproven.rollback": "train on the target, checkpoint, resume on the baseline, and compare",
    "unproven.soak": "a soak run of hours at production load: latency drift, memory growth",
    "unproven.recovery": "kill a target run, resume from its checkpoint, compare the curve",
    "unproven.scaling": "the same workload on 1, 2, 4, ... devices: efficiency",
    "unproven.data-pipeline": (
        "the production data loader and preprocessing, not frozen data: a workload's "
        "make_loader, or a script's DataLoader, measured on both sides"
    ),
}
WORDS |= {
    "unproven.pipeline-measured": Words(
        says=lambda f: (
            "measured on both sides: " + "; ".join(f"{role} {reason}" for role, reason in f.items())
        )
    ),
    "decision.settings-changed": Words(
        says=lambda f: (
            "the workload changed torch's settings: "
            + "; ".join(_setting_judged(s) for s in _items(f, "settings"))
        )
    ),
}


def _items(f: Figures, key: str) -> list[Figures]:
    value = f.get(key)
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _setting_judged(f: Figures) -> str:
    """A torch setting the workload changed, as each side's timed steps ran it."""
    if f.get("unfair"):
        how = "a side computed in another precision than it declared: fails"
    elif f.get("alike"):
        how = "the same on both sides: reported, not failed"
    elif f.get("breaks_contract"):
        how = "differs between the sides and changes what they compute in: fails"
    else:
        how = "differs between the sides: changes the figures"
    ran = f.get("ran")
    values = ran.items() if isinstance(ran, dict) else ()
    said = ", ".join(
        f"{role} {' or '.join(map(str, v if isinstance(v, list) else [])) or 'unknown'}"
        for role, v in values
    )
    return (
        f"{_str(f, 'setting')} was {_str(f, 'before')} at set-up, in the timed steps {said} ({how})"
    )


# -- end of the unproven items and the settings gate --------------------------------------------


def how_to_check(code: str) -> str:
    """How to check an unproven item, by its code (an older verdict's sentence as it is)."""
    return HOWS.get(code, code)


def unproven_evidence(u: UnprovenItem) -> str | None:
    """What was found toward an unproven item (None: nothing)."""
    if u.evidence is not None:
        return u.evidence
    return says(u.finding) if u.finding is not None else None


def unproven_how(u: UnprovenItem) -> str:
    """How to check an item still open, after what fell short where the judge found it."""
    how = how_to_check(u.how_to_check)
    return f"{says(u.finding)}; {how}" if u.finding is not None else how


WORDS |= {
    "shape.measured": Words(says=_shape),
}


def bytes_text(n: int) -> str:
    """Bytes in binary units, three significant figures (``1.25 GiB``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:,.3g} TiB"


def _kv_cache(f: Figures) -> str:
    return (
        f"2 x {_int(f, 'layers')} layers x {_int(f, 'width')} wide x {_int(f, 'batch')} x "
        f"{_int(f, 'tokens')} tokens x {_int(f, 'size')} B"
    )


def part_how(p: MemoryPart) -> str:
    """How a part of a projected peak was projected (an older verdict's sentence as it was)."""
    if p.basis is None:
        return p.how or ""
    return says(p.basis)


def fit(s: SideFit) -> str:
    """A side's projected peak at production size against its device memory."""
    if s.summary is not None:
        return s.summary
    peak = bytes_text(s.peak_bytes)
    if s.memory is None:
        return (
            f"projected peak {peak}; device memory unknown (not reported, not in "
            "devices/specs.toml): fit not judged"
        )
    memory, margin = s.memory.bytes, s.margin_bytes or 0
    if margin >= 0:
        return (
            f"fits: projected peak {peak} of {bytes_text(memory)} ({bytes_text(margin)} to spare)"
        )
    how = (
        f"fits on {s.fsdp_devices} devices with FSDP"
        if s.fsdp_devices is not None
        else "no device count fits: activations and runtime alone exceed one device"
    )
    return (
        f"does not fit: projected peak {peak} exceeds {bytes_text(memory)} by "
        f"{bytes_text(-margin)} ({s.peak_bytes / memory:.1f}x); {how}"
    )


def fit_reason(f: Fit) -> str:
    """Why the fit was not projected (an older verdict's sentence as it was)."""
    return says(f.finding) if f.finding is not None else f.reason or ""


WORDS |= {
    "fit.weights": Words(says=lambda f: f"{_int(f, 'parameters'):,} parameters x 4 B"),
    "fit.gradients": Words(says=lambda f: "4 B a parameter"),
    "fit.optimizer": Words(
        says=lambda f: (
            f"{_str(f, 'optimizer') or 'adamw (assumed)'}: {_int(f, 'per')} B a parameter"
        )
    ),
    "fit.kv-cache": Words(says=_kv_cache),
    "fit.activations": Words(
        says=lambda f: (
            f"{bytes_text(_int(f, 'per'))} a sample-token measured x {_int(f, 'batch')} x "
            f"{_int(f, 'tokens')}"
        )
    ),
    "fit.runtime": Words(says=lambda f: "the load peak less its weights"),
    "fit.host-copy": Words(says=lambda f: "parity's host copy"),
    "fit.probe-copy": Words(says=lambda f: "the numerics probe's copy"),
    "fit.no-production": Words(
        says=lambda f: (
            "no production shape declared ([production] in the plan, --production): fit at "
            "production size not checked"
        )
    ),
    "fit.no-shape": Words(
        says=lambda f: "the workload reports no parameter count or batch size to project from"
    ),
    "fit.side-missing": Words(says=lambda f: f"the {_str(f, 'role')} did not run"),
    "fit.no-peak": Words(
        says=lambda f: (
            f"the {_str(f, 'role')}: the side recorded no memory peak for its load and its steps"
        )
    ),
}
METHODS |= {
    "fit.projection": (
        "weights 4 B/parameter, gradients 4 B and optimizer states by kind (training), the "
        "key/value cache at the declared batch and length (generation; layers and width grown "
        "as the cube root of the parameter ratio), activations per sample-token from the "
        "measured steps' peak (scaled by samples and tokens only: a lower bound for a wider "
        "production model), the runtime as measured at load; FSDP shards weights, gradients "
        "and optimizer states"
    ),
}


# -- numerics against fp64: the reference notes, the localisation's rule --


def note(n: ReferenceNote) -> str:
    """Why a reference or the expected-error run is not used (an older verdict's sentence
    as it was)."""
    return says(n.finding) if n.finding is not None else n.reason or ""


def numerics_reason(n: NumericsSection) -> str:
    """Why the numerics section did not run: the probe's own error, or the judge's finding."""
    return n.reason if n.reason is not None else says(n.finding) if n.finding is not None else ""


def localisation_rule(loc: Localisation) -> str:
    """The rule that names the first diverging module (an older verdict's sentence as it is)."""
    if loc.rule == "numerics.not-localised":
        return (
            f"not localised: without the expected-error run, what {loc.precision} alone does at "
            "each module is unknown (every matmul would exceed the fp32 baseline's error)"
        )
    if loc.rule != "numerics.localised":
        return loc.rule
    source = (
        f"the expected-error run ({loc.expected_run}) or the baseline, whichever is larger"
        if loc.expected_run is not None
        else "the baseline (no expected-error run)"
    )
    return (
        f"first module, in execution order, whose error against fp64 exceeds "
        f"{loc.factor or 0:g}x what explains it: the error the target's precision alone makes "
        f"there ({source}), scaled up by how much more error its input carried "
        f"(+{EXPLAINED_FLOOR:g}); or whose output is the first that is not finite"
    )


WORDS |= {
    "numerics.no-reference": Words(says=lambda f: "no fp64 reference bundle"),
    "numerics.no-expected": Words(
        says=lambda f: (
            f"no expected-error run ({_str(f, 'want')}): the baseline's error is the comparator"
        )
    ),
    "numerics.expected-differs": Words(
        says=lambda f: (
            f"the expected-error run is {_str(f, 'ran')}, the target's precision needs "
            f"{_str(f, 'want')}"
        )
    ),
    "numerics.no-probe": Words(says=lambda f: "the sides ran no numerics probe"),
    "numerics.ungated": Words(
        says=lambda f: (
            f"reported, not gated: without the expected-error run, what {_str(f, 'precision')} "
            "alone does is unknown, and the baseline's error is no bound for it"
        )
    ),
}


# -- drift gates (a soak's slopes) and the serving soak's unproven item --


def slope(g: SlopeGate) -> str:
    """What a drift gate found: the slope, its interval and the bound, and what that means
    (an older check's or verdict's sentence as it was)."""
    if g.detail is not None:
        return g.detail
    if g.finding is not None:
        return says(g.finding)
    f = g.figure
    if f.slope is None or f.low is None or f.high is None:
        return ""
    said = f"{f.slope:+.3g} {f.unit} [95% {f.low:+.3g}, {f.high:+.3g}], bound {f.bound:g}"
    if not g.passed:
        return said + ": beyond the bound"
    return said + (": not excluded (run longer)" if f.high > f.bound else "")


def _soak_ran(f: Figures) -> str:
    drift = f.get("drift")
    gate = decode(SlopeGate, drift) if isinstance(drift, dict) else None
    said = f"{gate.name} {slope(gate)}" if gate is not None else ""
    return (
        f"parity serve --soak: the {_str(f, 'role')} at {_num(f, 'rate'):.4g} req/s for "
        f"{_num(f, 'duration_s'):g} s: {said}; limits {_str(f, 'limits')}"
    )


HOWS |= {
    "serve.soak": (
        "parity serve ... --soak 1h: constant arrivals at each side's highest passing rate, "
        "judged for latency drift"
    ),
}
WORDS |= {
    "drift.too-few-points": Words(says=lambda f: "too few points for a slope"),
    "drift.too-few-windows": Words(
        says=lambda f: (
            f"{_int(f, 'windows')} windows after warm-up, at least {_int(f, 'needed')} needed: "
            "run longer"
        )
    ),
    "serve.soak-ran": Words(says=_soak_ran),
}
