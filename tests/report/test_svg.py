"""Matplotlib figures as inline SVG: nothing external, ids prefixed, no empty plot."""

from __future__ import annotations

import matplotlib

from parity.report.svg import RC, Canvas, plain


def test_a_canvas_with_nothing_marked_draws_nothing() -> None:
    with matplotlib.rc_context(RC):
        assert Canvas("x").render("X") is None


def test_marked_series_get_unique_ids_and_the_svg_is_inline_ready() -> None:
    with matplotlib.rc_context(RC):
        canvas = Canvas("demo")
        (line,) = canvas.axes[0].plot([1, 2, 3], [3, 1, 2])
        canvas.mark(line, 3)
        plot = canvas.render("Demo", "three points")
    assert plot is not None and plot.points == 3 and plot.key == "demo"
    assert plot.svg.startswith("<svg") and 'id="demo-series-1"' in plot.svg
    assert "xmlns" not in plot.svg and "<!--" not in plot.svg
    assert plain("$5 a day") == r"\$5 a day"
