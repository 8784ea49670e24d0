"""How result objects show themselves: the verdict line, the ratio with its interval,
the quality gates."""

from __future__ import annotations

from pathlib import Path

from parity.bundle import load_bundle
from parity.report.summary import run_html, run_text, summary_html, summary_text
from tests.fixtures.runs import write_bundle
from tests.report.cases import cases

CASES = cases()


def test_a_comparison_shows_its_verdict_ratio_and_gates() -> None:
    text = summary_text(CASES["passes"], out=Path("/runs/x"))
    assert text.splitlines()[0] == "PASS: the target passes every gate"
    assert "target/baseline step time 0.701 [0.684, 0.718] (95% interval)" in text
    assert "loss curve" in text and "quality" in text and text.endswith("bundles: /runs/x")
    assert max(len(line) for line in text.splitlines()) <= 100
    html = summary_html(CASES["fails-quality"])
    assert "FAIL: the target fails a gate" in html and '<span class="badge withheld">' in html
    assert "<svg" not in html and "<script" not in html


def test_an_ungated_check_is_info_here_too() -> None:
    html = summary_html(CASES["tokens"])
    row = html[html.index("<td>generated tokens</td>") :].split("</tr>")[0]
    assert '<span class="badge info">INFO</span>' in row


def test_a_run_shows_its_side_status_and_median(tmp_path: Path) -> None:
    bundle = load_bundle(write_bundle(tmp_path / "b", role="run", spec="cpu+bf16"))
    text = run_text(bundle)
    assert text.startswith("<RunResult side cpu+bf16; status ok; median step (steady) ")
    assert str(tmp_path / "b") in run_html(bundle)
    failed = load_bundle(write_bundle(tmp_path / "f", role="run", spec="cpu", status="failed"))
    assert "reason planted failure" in run_text(failed)
