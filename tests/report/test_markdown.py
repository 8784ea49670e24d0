"""Markdown for a pull-request comment: the decision first, at most 60 lines."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from parity.report.markdown import MAX_LINES, render_markdown
from tests.fixtures.runs import LATER_SECTIONS, synthetic_run


@pytest.fixture(scope="module")
def verdict(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run = synthetic_run(tmp_path_factory.mktemp("md") / "run", extra=LATER_SECTIONS)
    data: dict[str, Any] = json.loads((run / "verdict.json").read_text())
    return data


def test_summary_has_the_decision_and_the_figures(verdict: dict[str, Any]) -> None:
    text = render_markdown(verdict, html_name="report.html")
    lines = text.splitlines()
    assert lines[0] == "### parity: PASS: the target passes every gate"
    assert "| median step (steady) |" in text and "**Speed**: target/baseline" in text
    assert "- PASS both sides ran: ok" in text and "- precision: fp32 -> bf16" in text
    assert "numerics" in lines[-3] and "cost" in lines[-3] and "`report.html`" in lines[-3]
    assert len(lines) <= MAX_LINES


def test_long_verdicts_are_cut_to_60_lines(verdict: dict[str, Any]) -> None:
    big = copy.deepcopy(verdict)
    big["gates"] += [{"name": f"gate {i}", "passed": False, "detail": "x|y"} for i in range(50)]
    big["quality"]["checks"] += [
        {
            "name": f"output {i}",
            "kind": "output",
            "passed": True,
            "rel_rmse": 1e-3,
            "tolerance": 1e-2,
        }
        for i in range(50)
    ]
    big["environment_differences"] = [
        {"field": f"f{i}", "baseline": "a\nb", "target": "c"} for i in range(30)
    ]
    big["sides"]["target"]["noise_warnings"] = [f"noisy {i}" for i in range(20)]
    big["passed"] = False
    text = render_markdown(big)
    assert len(text.splitlines()) <= MAX_LINES
    assert "... and 47 more" in text and "x\\|y" in text


def test_failed_side_and_no_speed(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "f", target_status="failed")
    text = render_markdown(json.loads((run / "verdict.json").read_text()))
    assert text.startswith("### parity: FAIL") and "no verdict" in text
    assert "- target failed: r00: planted failure" in text
