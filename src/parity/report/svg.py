"""Matplotlib figures as SVG fit to sit inside an HTML page with other plots: no XML
prolog, DOCTYPE, metadata or comments, no namespace URLs (the HTML parser puts ``<svg>``
in the SVG namespace by itself), and every ``id`` prefixed with the plot's key so that
two plots never share one. Each data series is drawn in a group whose id holds
``series``, so a test can find and measure what was drawn.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from parity.printable import printable

COLORS = {"baseline": "#3b6fb6", "target": "#e07b39", "expected": "#8e8e8e"}
WIDTH_IN = 9.0
RC: Any = {  # rcParams; typed Any because matplotlib types keys as literals
    "svg.hashsalt": "parity",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}


@dataclass(frozen=True)
class Plot:
    """One rendered plot: ``points`` counts the data values drawn."""

    key: str
    title: str
    svg: str
    points: int
    caption: str = ""


class Canvas:
    """A figure plus a counter that gives each data series a unique group id."""

    def __init__(self, key: str, rows: int = 1, cols: int = 1, height: float = 3.2) -> None:
        self.key = key
        self.fig = Figure(figsize=(WIDTH_IN, height), layout="constrained")
        self.axes: list[Axes] = list(self.fig.subplots(rows, cols, squeeze=False).flat)
        self.points = 0
        self._series = 0

    def mark(self, artists: Iterable[Artist] | Artist, points: int) -> None:
        """Tag drawn artists as data and count their values."""
        items = [artists] if isinstance(artists, Artist) else list(artists)
        for artist in items:
            self._series += 1
            artist.set_gid(f"series-{self._series}")
        self.points += points

    def render(self, title: str, caption: str = "") -> Plot | None:
        if self.points == 0:
            return None
        svg = printable(to_svg(self.fig, self.key))  # labels from a bundle: made visible
        return Plot(self.key, title, svg, self.points, caption)


def to_svg(fig: Figure, prefix: str) -> str:
    """The figure as an inline SVG element with ids prefixed and nothing external."""
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = svg.replace("xlink:href=", "href=")
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', svg)
    return svg.strip()


def log_scale(ax: Axes, axis: str = "y") -> None:
    """A log scale whose tick labels are plain text ("0.001", "1e+04"): matplotlib's
    default labels are mathtext, which it parses again on every layout pass, most of a
    report's time."""
    set_scale = ax.set_yscale if axis == "y" else ax.set_xscale
    set_scale("log")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(LogFormatter(labelOnlyBase=False))
    target.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.4)))


def plain(text: Any) -> str:
    """Text for matplotlib from data: a dollar sign must not start mathtext."""
    return str(text).replace("$", r"\$")
