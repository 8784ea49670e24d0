"""One view of a verdict: ordered sections of sentences and tables, written once.

Terminal, Markdown, HTML and the Python result objects format this view; none of them
reads the verdict itself. Each figure is the verdict's own (the Sides table's median step
is the pooled ``SideInfo.median_step_s`` the speed ratio compares), written once by
``parity.report.fmt``; a section with nothing to say is left out.

The order is the order a careful reader checks a comparison in: the gates, the sides,
fairness and what differs, quality and numerics, speed (and the input pipeline) and
cost, memory and phases, compatibility, and what is not yet proven.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from parity.model.verdict import Verdict
from parity.report import compat, decision, fair, figures, inputs, quality
from parity.report.decision import Sides
from parity.report.parts import Section, View
from parity.report.quality import LAYER_ROWS
from parity.report.stack import PACKAGE_ROWS

__all__ = ["Sides", "build_view"]


@dataclass(frozen=True)
class Run:
    """A comparison read back: its verdict and, where they load, each side's bundles."""

    path: Path
    verdict: Verdict
    sides: Sides
    problems: tuple[str, ...] = ()


def build_view(
    verdict: Verdict,
    *,
    sides: Sides | None = None,
    notes: tuple[str, ...] = (),
    layer_rows: int | None = LAYER_ROWS,
    package_rows: int | None = PACKAGE_ROWS,
) -> View:
    """The view of ``verdict``; ``sides`` (each side's bundles, where they loaded) adds
    what only the bundles record, such as a steady state that was never reached.
    ``layer_rows`` caps the per-module numerics table and ``package_rows`` the packages
    that differ (None: every module, every package)."""
    title, subtitle = decision.headline(verdict)
    made: list[Section | None] = [
        decision.gates(verdict),
        decision.sides(verdict, sides),
        decision.fairness(verdict),
        decision.differences(verdict, package_rows),
        fair.tuning(verdict),
        fair.shape(verdict),
        quality.quality(verdict),
        quality.numerics(verdict, layer_rows=layer_rows),
        figures.speed(verdict),
        fair.slo(verdict),
        inputs.input_pipeline(verdict),
        figures.cost(verdict),
        figures.memory(verdict),
        fair.fit(verdict),
        figures.phases(verdict),
        compat.compatibility(verdict),
        decision.unproven(verdict),
    ]
    return View(
        title=title,
        result=decision.overall(verdict),
        subtitle=subtitle,
        sections=tuple(s for s in made if s is not None and not s.empty),
        notes=notes,
    )
