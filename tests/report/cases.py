"""Verdicts the report tests render: every golden file, and variants that add what the
golden files lack (a 112-module localisation with long names, an ungated tokens check,
a failed side with a stderr tail), plus helpers that read a view's texts back."""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from parity.model.codec import decode
from parity.model.metrics import InputPipeline
from parity.model.quality import TokensCheck
from parity.model.spec import parse_side
from parity.model.verdict import ByRole, Gate, SideInfo, Steadiness, Verdict
from parity.report.layout import segments
from parity.report.parts import Sentence, Table, View
from tests.fixtures.runs import STDERR_TAIL, with_layers

GOLDEN = Path(__file__).parent.parent / "golden"
GOLDEN_NAMES = sorted(p.stem.removeprefix("verdict-") for p in GOLDEN.glob("verdict-*.json"))
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def golden(name: str) -> Verdict:
    return decode(Verdict, json.loads((GOLDEN / f"verdict-{name}.json").read_text()))


def with_tokens(verdict: Verdict) -> Verdict:
    """The verdict with an ungated tokens check (reported, not gated)."""
    assert verdict.quality is not None
    check = TokensCheck(
        name="generated tokens", gated=False, passed=None, agreement=0.9, first_difference=(3,)
    )
    quality = replace(verdict.quality, checks=(*verdict.quality.checks, check))
    return replace(verdict, quality=quality)


def with_failed_target(verdict: Verdict) -> Verdict:
    target = replace(
        verdict.sides.target,
        status="failed",
        reason="r01: the worker raised RuntimeError at bert.encoder.layer.3.attention.self.query",
        stderr_tail=STDERR_TAIL,
    )
    sides: ByRole[SideInfo] = ByRole(baseline=verdict.sides.baseline, target=target)
    gate = Gate(name="both sides ran", passed=False, detail=f"target failed: {target.reason}")
    return replace(
        verdict,
        sides=sides,
        gates=(gate,),
        quality=None,
        numerics=None,
        speed=None,
        cost=None,
        memory=None,
        phases=None,
    )


def with_long_names(verdict: Verdict) -> Verdict:
    """Sides as real machines name them: long device names and side specs."""
    cpu = "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"
    baseline = replace(verdict.sides.baseline, device_name=cpu, side=parse_side("cpu+threads=32"))
    target = replace(
        verdict.sides.target,
        device_name="AWS Trainium2 NeuronCore-v3",
        side=parse_side("neuron+bf16+compile=neuron"),
    )
    return replace(verdict, sides=ByRole(baseline=baseline, target=target))


def fed(wait: float, compute: float, *, copy: float | None = 0.0002) -> InputPipeline:
    """A side's input pipeline over 12 steady steps (seconds)."""
    spread = [1 + 0.01 * (i % 4) for i in range(12)]
    return InputPipeline(
        source="loader" if copy is not None else "script",
        method="per steady step: wait = next() on the loader (host); ...",
        wait_samples_s=tuple(wait * x for x in spread),
        copy_samples_s=None if copy is None else tuple(copy * x for x in spread),
        step_samples_s=tuple((wait + (copy or 0) + compute) * x for x in spread),
        prefetched_samples_s=None if copy is None else tuple(compute * x for x in spread),
    )


def with_input_pipeline(verdict: Verdict) -> Verdict:
    """Both sides fed by a loader: the baseline keeps up, the target is input-bound."""
    baseline = replace(verdict.sides.baseline, input_pipeline=fed(0.0004, 0.020))
    target = replace(verdict.sides.target, input_pipeline=fed(0.030, 0.006))
    return replace(verdict, sides=ByRole(baseline=baseline, target=target))


def cases() -> dict[str, Verdict]:
    """Every golden verdict, and the variants, by name."""
    made = {name: golden(name) for name in GOLDEN_NAMES}
    made["layers"] = with_layers(made["passes"])
    made["tokens"] = with_tokens(made["passes"])
    made["failed-target"] = with_failed_target(made["passes"])
    made["long-names"] = with_long_names(made["cheaper-but-slower"])
    made["input-bound"] = with_input_pipeline(made["passes"])
    made["busy"] = with_speed_findings(made["passes"])
    return made


@functools.cache
def page(name: str) -> str:
    """The HTML report of the case ``name`` with its bundles gone (every section, the plots
    that need no raw samples), rendered once per test process: several tests read each
    case's page, and its plots are most of a report test's CPU."""
    from parity.report.html import render_html
    from parity.report.view import Run

    return render_html(
        Run(path=Path("nowhere"), verdict=_cases()[name], sides=ByRole(baseline=None, target=None))
    )


@functools.cache
def _cases() -> dict[str, Verdict]:
    return cases()


def with_speed_findings(verdict: Verdict) -> Verdict:
    """Busy cores and threads placed two ways while measuring, as the judge finds them."""
    from parity.model.findings import Finding

    assert verdict.speed is not None
    busy = Finding(
        code="speed.contention",
        severity="reading",
        figures={
            "share": 0.87,
            "cores": 2,
            "threads": {"baseline": 2, "target": 2},
            "half_width_rel": 0.42,
            "stalled": 2,
            "processes": 12,
            "single_baseline": "cpu+threads=1",
            "single_target": "cpu+bf16+threads=1",
        },
    )
    placed = Finding(
        code="speed.thread-placements",
        severity="reading",
        figures={
            "stalled": False,
            "quick": 8,
            "slow": 4,
            "quick_ns": 6200.0,
            "slow_ns": 8600.0,
            "baseline_shift": 1.61,
            "target_shift": 1.34,
            "quick_ratio": [1.56, 1.5, 1.62],
            "slow_ratio": None,
        },
    )
    steady = Steadiness(findings=(busy, placed))
    return replace(verdict, speed=replace(verdict.speed, steadiness=steady))


def view_texts(view: View) -> tuple[list[str], list[str]]:
    """(texts, names): every text the view holds, and the module names of name columns."""
    texts = [view.title, view.subtitle, *view.notes]
    names: list[str] = []
    for section in view.sections:
        texts.append(section.title)
        for part in section.parts:
            if isinstance(part, Sentence):
                if not part.verbatim:
                    texts.append(part.text)
                continue
            texts += [x for x in (part.title, part.legend) if x]
            texts += [c.header for c in part.columns]
            for row in part.rows:
                for cell, col in zip(row.cells, part.columns, strict=True):
                    (names if col.kind == "name" else texts).append(cell)
    return texts, names


def atoms(text: str) -> list[str]:
    """The pieces of ``text`` that a line break must never cut."""
    return [s for word in text.split() for s in segments(word)]


def tables(view: View) -> list[Table]:
    return [p for s in view.sections for p in s.parts if isinstance(p, Table)]


def printed(draw: Callable[[Console], None], width: int, *, terminal: bool = False) -> str:
    """What ``draw`` prints on a console of ``width`` columns: a colour terminal, or a
    pipe (no terminal, no colour)."""
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=terminal,
        color_system="standard" if terminal else None,
        legacy_windows=False,
    )
    draw(console)
    return buf.getvalue()
