"""The speed section's words: busy cores, thread placements, the checks on the speed claim,
pace changes and waits, tuning settings and what each does to the ratio.
"""

from __future__ import annotations

from parity.model.fair import (
    Optimisation,
)
from parity.report.words.base import Figures, _int, _list, _names, _num, _str


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
