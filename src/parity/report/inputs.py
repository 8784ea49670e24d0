"""The view's input-pipeline section: for a workload fed by a data loader, the wait for
each batch, its copy to the device and the step with and without them, per side, and
whether a side is input-bound (its speed then measures its data pipeline as much as its
device)."""

from __future__ import annotations

from collections.abc import Callable

from parity.model.metrics import InputPipeline
from parity.model.verdict import Verdict
from parity.report import fmt
from parity.report.parts import Part, Section, Sentence, table

ROWS: tuple[tuple[str, Callable[[InputPipeline], str]], ...] = (
    ("wait for the batch", lambda p: fmt.seconds(p.wait_s)),
    ("copy to the device", lambda p: fmt.seconds(p.copy_s) if p.copy_s is not None else "-"),
    ("step with inputs", lambda p: fmt.seconds(p.step_s)),
    ("step, inputs prefetched", lambda p: fmt.seconds(p.prefetched_s)),
    ("step with inputs, after that", lambda p: fmt.seconds(p.after_s)),
    ("input share of the step", lambda p: fmt.share(p.input_share)),
    ("saved by prefetching", lambda p: fmt.share(p.prefetch_saving)),
    ("input-bound", lambda p: "yes" if p.input_bound else "no"),
    ("steady steps", lambda p: str(p.steps)),
)


def _cell(p: InputPipeline | None, get: Callable[[InputPipeline], str]) -> str:
    return fmt.DASH if p is None else get(p)


def input_pipeline(v: Verdict) -> Section | None:
    """Each side's input figures (medians over the steady steps of every ok repeat)."""
    a, b = v.sides.baseline.input_pipeline, v.sides.target.input_pipeline
    if a is None and b is None:
        return None
    rows = [(label, _cell(a, get), _cell(b, get)) for label, get in ROWS]
    legend = (
        "medians over the steady steps of every successful repeat; input share: (wait + "
        "copy) / step, summed over the steps; saved by prefetching: 1 - prefetched step / "
        "step with inputs (the smaller saving against the steps before and after the "
        "prefetched pass)"
    )
    parts: list[Part] = [
        table(
            [
                ("", "text"),
                (f"baseline {v.sides.baseline.side}", "number"),
                (f"target {v.sides.target.side}", "number"),
            ],
            rows,
            legend=legend,
        )
    ]
    for role, info in v.sides.items():
        p = info.input_pipeline
        if p is None:
            fed = (
                "its data not fingerprinted: script mode"
                if v.workload.description.script_mode
                else "frozen data on the device"
            )
            parts.append(Sentence(text=f"{role}: no loader measured ({fed})", tone="muted"))
            continue
        tail = (
            ": its step time measures its data pipeline as much as its device"
            if p.input_bound
            else ""
        )
        parts.append(
            Sentence(
                text=f"{role} {p.reason}{tail}",
                tone="warn" if p.input_bound else "good",
                brief=True,
            )
        )
    methods = dict.fromkeys(p.method for p in (a, b) if p is not None)
    parts += [Sentence(text=f"measured: {m}", tone="muted") for m in methods]
    return Section(key="input", title="Input pipeline", result="INFO", parts=tuple(parts))
