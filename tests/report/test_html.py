"""The HTML report: every section of the view as tables and sentences, plots inline,
nothing external, long tables scrolling inside their card."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parity.report.html import esc, render_html
from parity.report.markdown import render_markdown
from parity.report.run import load_run
from parity.report.terminal import render_terminal
from parity.report.view import build_view
from tests.fixtures.runs import synthetic_run, with_layers, write_verdict
from tests.report.cases import cases, printed
from tests.report.cases import page as case_page

CASES = cases()


def sections_of(page: str) -> list[str]:
    return re.findall(r'<section id="[^"]+" data-section="([^"]+)"', page)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = synthetic_run(tmp_path_factory.mktemp("html") / "run")
    write_verdict(out, with_layers(load_run(out).verdict))
    return out


@pytest.fixture(scope="module")
def full_page(full_run: Path) -> str:
    return render_html(load_run(full_run))


def test_sections_are_the_views_with_headings_and_result_words(
    full_run: Path, full_page: str
) -> None:
    run = load_run(full_run)
    view = build_view(run.verdict, sides=run.sides, layer_rows=None)
    assert sections_of(full_page) == [s.key for s in view.sections]
    for s in view.sections:
        assert (
            f'<h2>{esc(s.title)} <span class="badge {s.result.lower()}">{s.result}</span></h2>'
            in full_page
        )
    assert "<nav>" in full_page and 'href="#sec-numerics"' in full_page


def test_no_raw_dumps_and_no_empty_sections(full_page: str) -> None:
    text = re.sub(r"<svg.*?</svg>|<style>.*?</style>", "", full_page, flags=re.S)
    for raw in ("usd_per_accelerator_hour", "target_clean", "scanned", 'class="kv"', "{", "}"):
        assert raw not in text, raw
    assert ">Withheld<" not in full_page
    assert "price</td>" in full_page and "cost per successful run</td>" in full_page
    assert "python</td>" in full_page and ">same</th>" in full_page


def test_every_plot_is_there_with_data_and_nothing_is_external(full_page: str) -> None:
    plots = dict(re.findall(r'data-plot="([\w-]+)" data-points="(\d+)"', full_page))
    assert set(plots) == {"loss", "step-times", "speed", "memory", "phases", "layers", "cost"}
    assert all(int(n) > 0 for n in plots.values())
    assert "http" not in full_page.lower()
    assert "<script" not in full_page and "src=" not in full_page
    ids = re.findall(r'\bid="([^"]+)"', full_page)
    assert len(ids) == len(set(ids)), "element ids must be unique across plots"


def test_a_long_table_scrolls_in_its_card_with_the_name_column_fixed(full_page: str) -> None:
    assert "all 112 leaf modules" in full_page
    assert full_page.count('<div class="scroll tall">') == 1
    assert "th:first-child, td:first-child { position: sticky; left: 0;" in full_page
    assert '<tr class="hl"><td>bert.encoder.layer.4.attention.self.value</td>' in full_page


@pytest.mark.parametrize("name", list(CASES))
def test_every_verdict_renders_without_its_bundles(name: str) -> None:
    page = case_page(name)
    assert sections_of(page) == [s.key for s in build_view(CASES[name], layer_rows=None).sections]
    assert "http" not in page.lower()


def test_the_vocabulary_is_the_same_in_terminal_markdown_and_html() -> None:
    v = CASES["tokens"]
    lines = printed(lambda c: render_terminal(v, c, verbose=True), 120).splitlines()
    term = next(x for x in lines if "generated tokens" in x)
    md = next(x for x in render_markdown(v).splitlines() if "generated tokens" in x)
    page = case_page("tokens")
    row = page[page.index("<td>generated tokens</td>") :].split("</tr>")[0]
    assert "INFO" in term and "| INFO |" in md and '<span class="badge info">INFO</span>' in row
    for text in (term, md, row):
        assert "PASS" not in text and "info" not in text.replace("badge info", "")


def test_a_failed_side_shows_its_reason_and_an_escaped_stderr() -> None:
    page = case_page("failed-target")
    assert "FAIL: a side did not run to the end" in page and "RuntimeError: planted" in page
    assert "h&#116;tps://example.invalid/help" in page and "http" not in page
    assert 'data-section="speed"' in page and "WITHHELD" in page


def test_generation_run_has_latency_plots_and_percentiles(tmp_path: Path) -> None:
    page = render_html(load_run(synthetic_run(tmp_path / "g", kind="generate")))
    assert 'data-plot="latency"' in page and "Latency percentiles" in page
    assert "p99 over fewer than 100 samples" in page and 'data-plot="loss"' not in page


def test_escape_breaks_http_only_in_the_source() -> None:
    assert esc("see HTTPS://x <b>") == "see H&#84;TPS://x &lt;b&gt;"
