"""The codes of the verdict's own sections (decision, quality, speed, memory, cost,
compatibility) with their words, and how each section was made.
"""

from __future__ import annotations

from parity.model.fair import (
    SPEED_FLAGS,
)
from parity.report.words.base import (
    METHODS,
    WORDS,
    Words,
    _int,
    _list,
    _names,
    _num,
    _str,
    _verbatim,
)
from parity.report.words.quality import (
    _asymmetric,
    _at,
    _curve_lengths,
    _drift,
    _shapes,
    _undecided,
)
from parity.report.words.speed import (
    _checks,
    _contention,
    _contention_brief,
    _load_shift,
    _one_thread,
    _pace_change,
    _placements,
    _placements_brief,
    _probe_budget,
    _probe_cut,
    _run_judged,
    _seen,
    _waited,
    _withheld_emulated,
    _withheld_quality,
)

#: every code the judge emits, with its words
WORDS |= {
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
METHODS |= {
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
