"""Plots: drawn only with data, SVG fit to inline, and what each one draws."""

from __future__ import annotations

import re
from dataclasses import replace

from parity.model.spec import parse_side
from parity.model.verdict import ByRole
from parity.report import plots
from parity.report.view import Sides
from tests.report.cases import cases

CASES = cases()
NO_SIDES: Sides = ByRole(baseline=None, target=None)


def test_svg_is_inline_ready_and_ids_are_prefixed() -> None:
    v = CASES["passes"]
    sides = replace(v.sides, target=replace(v.sides.target, side=parse_side("cpu+compile=$x$")))
    plot = plots.speed_plot(replace(v, sides=sides))
    assert plot is not None and plot.points == 3
    svg = plot.svg
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    for absent in ("<?xml", "<!DOCTYPE", "<metadata", "<!--", "xmlns", "xlink:", "http"):
        assert absent not in svg
    assert 'id="speed-series-1"' in svg
    assert all(i.startswith("speed-") for i in re.findall(r'\bid="([^"]+)"', svg))


def test_no_data_no_plot() -> None:
    v = replace(CASES["fails-quality"], memory=None, phases=None)
    assert plots.all_plots(v, NO_SIDES) == {}


def test_plots_from_the_verdict_alone() -> None:
    made = plots.all_plots(CASES["layers"], NO_SIDES)
    assert set(made) == {"speed", "memory", "phases", "layers", "cost"}
    layers = made["layers"]
    assert layers.points == 2 * 40 and "40 of 112 leaf modules" in layers.caption
    assert made["cost"].points == 4


def test_a_plot_that_fails_is_named_not_raised() -> None:
    v = CASES["passes"]
    assert v.speed is not None
    broken = replace(v, speed=replace(v.speed, compliance=7))  # type: ignore[arg-type]
    problems: list[str] = []
    assert "speed" not in plots.all_plots(broken, NO_SIDES, problems)
    assert problems and "speed plot was left out" in problems[0]


def test_the_speed_plot_draws_each_placement_s_ratio() -> None:
    """Where the host placed the threads two ways, each placement's ratio is a row with its
    interval (a placement with too few processes of a side has none, and no row)."""
    from parity.model.verdict import Steadiness, ThreadPlacement, ThreadPlacements

    v = CASES["passes"]
    assert v.speed is not None
    before = plots.speed_plot(v)
    two = ThreadPlacements(
        quicker=ThreadPlacement(
            processes=63, handoff_ns=6199.0, ratio=1.577, low=1.556, high=1.597
        ),
        slower=ThreadPlacement(processes=33, handoff_ns=8773.0, ratio=1.327, low=1.303, high=1.350),
    )
    after = plots.speed_plot(
        replace(v, speed=replace(v.speed, steadiness=Steadiness(placements=two)))
    )
    assert before is not None and after is not None
    # each row with an interval is a marker and its two bars (canvas.mark: 1 + 2 points)
    assert after.points == before.points + 2 * 3
    assert "each placement's processes" in after.caption
    lone = replace(two, slower=ThreadPlacement(processes=2, handoff_ns=8773.0))
    one = plots.speed_plot(
        replace(v, speed=replace(v.speed, steadiness=Steadiness(placements=lone)))
    )
    assert one is not None and one.points == before.points + 3
