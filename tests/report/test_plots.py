"""Plots: drawn only with data, SVG fit to inline, and the heuristics for later sections."""

from __future__ import annotations

from typing import Any

from parity.report import plots


def test_svg_is_inline_ready_and_ids_are_prefixed() -> None:
    verdict: dict[str, Any] = {
        "sides": {"baseline": {"spec": "cpu"}, "target": {"spec": "cpu+$x$"}},
        "speed": {"ratio": 0.9, "interval": {"low": 0.8, "high": 1.0, "confidence": 0.95}},
    }
    plot = plots.speed_plot(verdict)
    assert plot is not None and plot.points == 3
    svg = plot.svg
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    for absent in ("<?xml", "<!DOCTYPE", "<metadata", "<!--", "xmlns", "xlink:", "http"):
        assert absent not in svg
    assert 'id="speed-series-1"' in svg
    assert all(i.startswith("speed-") for i in plots.re.findall(r'\bid="([^"]+)"', svg))


def test_no_data_no_plot() -> None:
    empty: dict[str, Any] = {"sides": {}, "speed": None, "memory": {}, "phases": {}}
    assert plots.all_plots(empty, {"baseline": None, "target": None}) == {}


def test_a_plot_that_fails_is_named_not_raised() -> None:
    problems: list[str] = []
    verdict: dict[str, Any] = {"speed": {"ratio": 1.0, "compliance": 3}}
    assert "speed" not in plots.all_plots(verdict, {}, problems)
    assert problems and "speed plot was left out" in problems[0]


def test_layer_table_prefers_modules_and_error_columns() -> None:
    numerics = {
        "gates": [{"name": "output x", "rel_error": 0.1}],
        "layers": {
            "table": [
                {
                    "module": "a",
                    "baseline_error": 1e-6,
                    "target_error": 2e-6,
                    "target_input_error": 1e-6,
                    "amplification": 2.0,
                },
                {
                    "module": "b",
                    "baseline_error": 1e-6,
                    "target_error": 9e-5,
                    "target_input_error": 2e-6,
                    "amplification": 45.0,
                },
            ],
            "first_divergence": "b",
            "first_divergence_row": {"module": "b"},
        },
    }
    rows, columns, first = plots.layer_table(numerics)
    assert [r["module"] for r in rows] == ["a", "b"]
    assert columns == ["baseline_error", "target_error"] and first == "b"
    plot = plots.layer_error_plot({"numerics": numerics, "sides": {}})
    assert plot is not None and plot.points == 4


def test_cost_items_read_both_sides_and_nested_breakdowns() -> None:
    flat = {"baseline": {"usd_per_hour": 4.0}, "target": {"usd_per_hour": 2.0}, "note": "x"}
    assert plots.cost_items(flat) == [("usd_per_hour", {"baseline": 4.0, "target": 2.0})]
    nested = {"per_run": {"baseline": {"total": {"usd": 3}}, "target": {"total": {"usd": 1}}}}
    assert plots.cost_items(nested) == [("total.usd", {"baseline": 3.0, "target": 1.0})]
    assert plots.cost_items("not a section") == []
