"""Markdown for a pull-request comment: the decision first, at most 60 lines."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from parity.model.quality import OutputCheck
from parity.model.verdict import Gate
from parity.report.markdown import MAX_LINES, render_markdown
from tests.report.cases import cases

CASES = cases()


@pytest.mark.parametrize("name", list(CASES))
def test_every_verdict_fits_a_comment(name: str) -> None:
    text = render_markdown(CASES[name], html_name="report.html")
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES
    assert lines[0].startswith(f"### parity: {'PASS' if CASES[name].passed else 'FAIL'}: ")
    assert "speed " in lines[0] and "cost" in lines[0]  # the speed word and the cost answer
    assert any(line.startswith("| speed | ") for line in lines)
    assert lines[-1].endswith("`report.html`</sub>")
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.startswith("|"):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    for block in blocks:
        pipes = {len(re.findall(r"(?<!\\)\|", line)) for line in block}
        assert len(pipes) <= 1, block  # every row has the header's cells


def test_summary_has_the_decision_and_the_figures() -> None:
    text = render_markdown(CASES["passes"], html_name="report.html")
    assert "#### Gates: PASS" in text and "| median step (steady) | 10.00 ms | 7.01 ms |" in text
    assert "target/baseline step time 0.701 [0.684, 0.718] (95% interval)" in text
    assert "| precision | fp32 | bf16 |" in text
    assert (
        "**Also in the report**: Tuning, Workload shape, Memory, Phases, Compatibility, "
        "Not yet proven" in text
    )
    assert "the ratio is not a hardware result" in text  # the tuning label, beside the ratio


def test_failed_and_withheld_are_bold_and_ungated_is_info() -> None:
    failed = render_markdown(CASES["fails-quality"])
    assert "#### Speed: **WITHHELD**" in failed and "| loss curve | **FAIL** |" in failed
    tokens = render_markdown(CASES["tokens"])
    assert re.search(r"\| generated tokens \| INFO \|", tokens)


def test_long_verdicts_are_cut_with_a_count() -> None:
    v = CASES["passes"]
    assert v.quality is not None
    gates = tuple(Gate(name=f"gate {i}", passed=False, detail="x|y") for i in range(50))
    checks = tuple(
        OutputCheck(name=f"output {i}", passed=True, rel_rmse=1e-3, tolerance=1e-2)
        for i in range(50)
    )
    big = replace(v, gates=gates, quality=replace(v.quality, checks=checks))
    text = render_markdown(big)
    assert len(text.splitlines()) <= MAX_LINES
    assert "| ... and 43 more |  |  |" in text and "x\\|y" in text
    assert text.startswith("### parity: FAIL")


def test_a_failed_side_says_why() -> None:
    text = render_markdown(CASES["failed-target"])
    assert "#### Speed: **WITHHELD**" in text and "the target did not run to the end" in text
    assert "target failed: r01: the worker raised RuntimeError" in text
