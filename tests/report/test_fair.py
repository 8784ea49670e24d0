"""The fair-comparison sections in every view: terminal, Markdown, HTML and MLflow, read
from the golden fair-rules verdict (a tuned baseline, a pilot of a 1.3B model, a latency
limit the sides cannot show)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from parity.comparison import Comparison
from parity.model.codec import decode
from parity.model.roles import ByRole
from parity.model.verdict import Verdict
from parity.report.fair import mlflow_figures
from parity.report.html import render_html
from parity.report.markdown import render_markdown
from parity.report.mlflow import run_record
from parity.report.terminal import render_terminal
from parity.report.view import Run, build_view

GOLDEN = Path(__file__).parent.parent / "golden"
LABEL = "baseline tuned, target first-run (torch.compile, reduced precision (autocast))"


def verdict() -> Verdict:
    return decode(Verdict, json.loads((GOLDEN / "verdict-fair-rules.json").read_text()))


def terminal(v: Verdict, width: int = 100) -> str:
    out = io.StringIO()
    render_terminal(v, Console(file=out, width=width, color_system=None), verbose=True)
    return out.getvalue()


def test_the_view_has_the_four_sections_and_the_label_beside_the_ratio() -> None:
    view = build_view(verdict())
    keys = [s.key for s in view.sections]
    for key in ("tuning", "shape", "slo", "fit"):
        assert key in keys
    speed = view.section("speed")
    assert speed is not None
    texts = [getattr(p, "text", "") for p in speed.parts]
    assert texts[1].startswith(LABEL)
    slo = view.section("slo")
    assert slo is not None and slo.result == "FAIL"


def test_terminal_markdown_and_html_say_each_rule() -> None:
    v = verdict()
    for text in (
        " ".join(terminal(v, 200).split()),
        render_markdown(v),
        render_html(Run(path=Path("x"), verdict=v, sides=ByRole(baseline=None, target=None))),
    ):
        assert "the ratio is not a hardware result" in text
        assert "latency limits" in text.lower()
    full = " ".join(terminal(v, 200).split())
    assert "parameters 0.31% of production" in full
    assert "seq_len 1/32 of production" in full
    assert "does not fit: projected peak 19.4 GiB exceeds 14.9 GiB" in full
    assert "fits on 2 devices with FSDP" in full
    assert "optimizer states" in full and "KV cache" not in full
    assert "needs at least" not in full and "not measured" in full


def test_narrow_terminals_keep_every_line_within_the_width() -> None:
    for width in (40, 60):
        assert all(len(line) <= width for line in terminal(verdict(), width).splitlines())


def test_mlflow_tags_and_metrics(tmp_path: Path) -> None:
    v = verdict()
    tags, figures = mlflow_figures(v)
    assert tags["parity.tuning"].startswith(LABEL)
    assert tags["parity.representative"] == "false" and tags["parity.slo"] == "FAIL"
    assert figures["fit.target.fsdp_devices"] == 2
    assert figures["shape.batch_size.fraction"] == 1.0
    record = run_record(Comparison(out=tmp_path, baseline=None, target=None, verdict=v))
    assert record.tags["parity.slo"] == "FAIL"
    assert record.metrics["fit.baseline.peak_bytes"] == v.fit.sides.baseline.peak_bytes  # type: ignore[union-attr]
