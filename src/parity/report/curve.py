"""``compare --batch-sizes``: one comparison per batch size, read as a throughput-latency
curve (a table of each verdict's own figures), for the terminal renderer."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from parity.judge.slo import best_batch
from parity.model.metrics import Percentiles
from parity.model.verdict import SideInfo, Verdict
from parity.report import fmt, words
from parity.report.parts import Part, Section, Sentence, table
from parity.report.terminal import print_sections


def _latency(side: SideInfo) -> Percentiles | None:
    if side.inference is not None:
        return side.inference.latency_s
    return side.generation.e2e_s if side.generation is not None else None


def _rate(side: SideInfo) -> str:
    return fmt.rate(side.throughput.samples_per_s if side.throughput else None, "samples")


def curve_section(points: Sequence[tuple[int, Verdict]]) -> Section:
    """One row per batch size: each side's latency percentiles and throughput."""
    rows = []
    marked = False
    for batch, v in points:
        a, b = _latency(v.sides.baseline), _latency(v.sides.target)
        counts = " / ".join(fmt.DASH if p is None else str(p.n) for p in (a, b))
        marked = marked or any(p is not None and p.n < fmt.P99_MIN_SAMPLES for p in (a, b))
        rows.append(
            (
                str(batch),
                fmt.percentiles(a),
                _rate(v.sides.baseline),
                fmt.percentiles(b),
                _rate(v.sides.target),
                counts,
                "PASS" if v.passed else "FAIL",
            )
        )
    legend = (
        "latency p50 / p90 / p99 per step over each side's repeats (pooled, as the speed "
        "ratio is); samples: baseline / target"
    )
    made = table(
        [
            ("batch", "number"),
            ("baseline latency", "number"),
            ("baseline throughput", "number"),
            ("target latency", "number"),
            ("target throughput", "number"),
            ("samples", "number"),
            ("result", "result"),
        ],
        rows,
        legend=f"{legend}; {fmt.P99_LEGEND}" if marked else legend,
    )
    parts: list[Part] = [made]
    best = best_batch(points)
    if best is not None:
        parts += [
            Sentence(text=f"{role}: {words.curve_best(b)}", tone="strong", brief=True)
            for role, b in best.items()
        ]
    labels = {
        words.says(v.tuning.label) for _, v in points if v.tuning is not None and v.tuning.label
    }
    parts += [Sentence(text=label, tone="bad", brief=True) for label in sorted(labels)]
    return Section(
        key="curve",
        title="Throughput and latency by batch size",
        result="INFO",
        parts=tuple(parts),
    )


def render_curve(
    points: Sequence[tuple[int, Verdict]], console: Console, *, wide: bool = False
) -> None:
    print_sections([curve_section(points)], console, wide=wide)
