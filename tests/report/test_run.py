"""A comparison directory read back, and the report writers."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from parity.comparison import Comparison
from parity.errors import BundleError, UsageError
from parity.report.run import load_run, report_after_compare, write_reports
from tests.fixtures.runs import synthetic_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(tmp_path_factory.mktemp("run") / "run")


def test_a_run_loads_its_typed_verdict_and_both_sides(run_dir: Path) -> None:
    run = load_run(run_dir)
    assert run.problems == () and run.verdict.passed
    assert run.sides.baseline is not None and len(run.sides.baseline.repeats) == 2


def test_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"holds no verdict\.json"):
        load_run(tmp_path)
    (tmp_path / "verdict.json").write_text("[1, 2")
    with pytest.raises(BundleError, match="not valid JSON"):
        load_run(tmp_path)
    (tmp_path / "verdict.json").write_text('{"sides": {}}')
    with pytest.raises(BundleError, match=r"not a parity verdict this version reads \(\$"):
        load_run(tmp_path)


def test_missing_bundles_cost_plots_not_the_report(run_dir: Path, tmp_path: Path) -> None:
    only = tmp_path / "only-verdict"
    only.mkdir()
    shutil.copy(run_dir / "verdict.json", only / "verdict.json")
    (only / "verdict.json").write_text(
        (only / "verdict.json").read_text().replace(str(run_dir), str(tmp_path / "gone"))
    )
    run = load_run(only)
    assert len(run.problems) == 2 and "could not be read" in run.problems[0]
    text = write_reports(only, html=Path("-"))["html"]
    assert isinstance(text, str) and "could not be read" in text
    assert 'data-plot="speed"' in text and 'data-plot="loss"' not in text


def test_markdown_and_json_outputs(run_dir: Path, tmp_path: Path) -> None:
    made = write_reports(
        run_dir, html=tmp_path / "a.html", md=tmp_path / "a.md", json_path=tmp_path / "a.json"
    )
    assert set(made) == {"html", "md", "json"}
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads(
        (run_dir / "verdict.json").read_text()
    )
    assert "`a.html`" in (tmp_path / "a.md").read_text()
    assert write_reports(run_dir, md=Path("-"))["md"] == (tmp_path / "a.md").read_text().replace(
        "`a.html`", "the HTML report (`parity report`)"
    )


def test_default_is_report_html_in_the_run(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "d", priced=False)
    assert write_reports(run) == {"html": run / "report.html"}
    assert "no cost verdict" in (run / "report.html").read_text()


def test_without_matplotlib_one_line_names_the_extra(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("parity.report.html", "parity.report.plots", "parity.report.svg"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError, match=r"pip install 'parity\[report\]'"):
        write_reports(run_dir, html=Path("-"))
    # markdown needs no extra; after a comparison the missing extra only warns
    assert write_reports(run_dir, md=Path("-"))["md"]
    assert report_after_compare(Comparison.load(run_dir)) is None
    assert "parity[report]" in caplog.text


@pytest.mark.slow
def test_no_report_writes_everything_but_the_html_and_report_makes_it_later(
    tmp_path: Path,
) -> None:
    from parity import api
    from parity.request import CompareRequest

    out = tmp_path / "cmp"
    request = CompareRequest.from_kwargs(
        workload="mlp-train", target="cpu+bf16", steps=4, repeats=1, compliance=False,
        report=False, out=str(out),
    )  # fmt: skip
    result = api.compare(request)
    assert result.report is None and not (out / "report.html").exists()
    assert (out / "verdict.json").is_file() and (out / "baseline").is_dir()
    assert json.loads((out / "request.json").read_text())["report"] is False
    assert write_reports(out) == {"html": out / "report.html"}
    assert "<svg" in (out / "report.html").read_text()
    with_report = CompareRequest.from_kwargs(workload="mlp-train", out=str(tmp_path / "x"))
    assert with_report.report is True  # the default
