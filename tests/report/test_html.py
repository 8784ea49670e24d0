"""The HTML report: self-contained, in the verdict's order, robust to what it does not know."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parity.cli import app
from parity.errors import BundleError, UsageError
from parity.report.html import esc, section_keys
from parity.report.run import load_run, report_after_compare, write_reports
from tests.fixtures.runs import LATER_SECTIONS, synthetic_run

runner = CliRunner()


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(tmp_path_factory.mktemp("html") / "run", extra=LATER_SECTIONS)


def sections_of(page: str) -> list[str]:
    return re.findall(r'<section id="[^"]+" data-section="([^"]+)"', page)


def test_sections_follow_the_verdict_order_and_unknown_ones_render(full_run: Path) -> None:
    page = write_reports(full_run, html=full_run / "r.html")["html"]
    assert isinstance(page, Path)
    text = page.read_text()
    verdict = json.loads((full_run / "verdict.json").read_text())
    assert sections_of(text) == section_keys(verdict)
    order = sections_of(text)
    assert order[:3] == ["fairness", "differences", "gates"]
    assert order.index("quality") < order.index("speed") < order.index("memory")
    assert order[-1] == "brand_new_section" and {"numerics", "cost", "unproven"} <= set(order)
    assert "rollback path" in text and ">42<" in text


def test_every_plot_is_there_with_data_and_nothing_is_external(full_run: Path) -> None:
    text = load_and_render(full_run)
    plots = dict(re.findall(r'data-plot="([\w-]+)" data-points="(\d+)"', text))
    assert set(plots) == {
        "loss",
        "step-times",
        "speed",
        "memory",
        "phases",
        "layers",
        "cost",
    }
    assert all(int(n) > 0 for n in plots.values())
    assert "http" not in text.lower()
    assert "<script" not in text and "src=" not in text
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "element ids must be unique across plots"


def load_and_render(run: Path) -> str:
    made = write_reports(run, html=Path("-"))
    assert isinstance(made["html"], str)
    return made["html"]


def test_generation_run_has_latency_plots(tmp_path: Path) -> None:
    text = load_and_render(synthetic_run(tmp_path / "g", kind="generate"))
    assert 'data-plot="latency"' in text and "TTFT p50 / p90 / p99" in text
    assert 'data-plot="loss"' not in text


def test_failed_side_reports_reason_without_plots_that_need_it(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "f", target_status="failed")
    text = load_and_render(run)
    assert "FAIL: the target fails a gate" in text and "planted failure" in text
    # the stderr tail holds a URL: it is shown, but never as the literal text
    assert "h&#116;tps://example.invalid/help" in text and "http" not in text
    assert "No speed verdict" in text and 'data-plot="step-times"' in text
    assert 'data-plot="speed"' not in text


def test_missing_bundles_cost_plots_not_the_report(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "m")
    verdict = json.loads((run / "verdict.json").read_text())
    only = tmp_path / "only-verdict"
    only.mkdir()
    (only / "verdict.json").write_text(json.dumps(verdict))
    shutil.rmtree(run)
    text = load_and_render(only)
    assert "could not be read" in text
    assert 'data-plot="speed"' in text and 'data-plot="loss"' not in text


def test_a_malformed_section_costs_that_section_only(full_run: Path, tmp_path: Path) -> None:
    verdict = json.loads((full_run / "verdict.json").read_text())
    verdict["speed"] = {"ratio": 1.1, "interval": "not an object", "compliance": 7}
    run = tmp_path / "bad"
    run.mkdir()
    (run / "verdict.json").write_text(json.dumps(verdict))
    text = load_and_render(run)
    assert "could not be rendered" in text and 'data-section="phases"' in text


def test_markdown_and_json_outputs(full_run: Path, tmp_path: Path) -> None:
    made = write_reports(
        full_run, html=tmp_path / "a.html", md=tmp_path / "a.md", json_path=tmp_path / "a.json"
    )
    assert set(made) == {"html", "md", "json"}
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads(
        (full_run / "verdict.json").read_text()
    )
    assert "`a.html`" in (tmp_path / "a.md").read_text()


def test_default_is_report_html_in_the_run(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "d")
    assert write_reports(run) == {"html": run / "report.html"}


def test_cli_report(full_run: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["report", str(full_run), "--md", "-", "--html", str(tmp_path / "x.html")]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("### parity: PASS")
    assert (tmp_path / "x.html").is_file() and "html: " in result.stderr
    bad = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert bad.exit_code == 2 and "holds no verdict.json" in bad.stderr


def test_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"holds no verdict\.json"):
        load_run(tmp_path)
    (tmp_path / "verdict.json").write_text("[1, 2]")
    with pytest.raises(BundleError, match="not a parity verdict"):
        load_run(tmp_path)


def test_without_matplotlib_one_line_names_the_extra(
    full_run: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("parity.report.html", "parity.report.plots"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError, match=r"pip install 'parity\[report\]'"):
        write_reports(full_run, html=Path("-"))
    # markdown needs no extra; after a comparison the missing extra only warns
    assert write_reports(full_run, md=Path("-"))["md"]
    assert report_after_compare(full_run) is None
    assert "parity[report]" in caplog.text


def test_escape_breaks_http_only_in_the_source() -> None:
    assert esc("see HTTPS://x <b>") == "see H&#84;TPS://x &lt;b&gt;"
