"""The view on a terminal and in a pipe: every line fits, no word is split, every module
name keeps its last part, and plain text has no colour and no box drawing."""

from __future__ import annotations

import pytest

from parity.model.verdict import Verdict
from parity.report.terminal import render_terminal
from parity.report.view import build_view
from tests.report.cases import ANSI, atoms, cases, printed, view_texts

CASES = cases()
BOX = set("─│┃━┏┓┗┛┌┐└┘├┤┬┴┼╭╮╯╰")


def render(verdict: Verdict, width: int, *, terminal: bool, wide: bool = False) -> str:
    """The full view (``--verbose``); ``tests/report/test_screen.py`` has the screen."""
    return printed(
        lambda c: render_terminal(verdict, c, wide=wide, verbose=True), width, terminal=terminal
    )


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("width", [40, 60, 80, 100, 200])
@pytest.mark.parametrize("name", list(CASES))
def test_every_line_fits_and_no_word_is_split(name: str, width: int, terminal: bool) -> None:
    verdict = CASES[name]
    raw = render(verdict, width, terminal=terminal)
    assert (ANSI.search(raw) is not None) == terminal
    text = ANSI.sub("", raw)
    lines = text.splitlines()
    too_long = [line for line in lines if len(line) > width]
    assert too_long == [], too_long[:3]
    texts, names = view_texts(build_view(verdict))
    split = sorted({a for t in texts for a in atoms(t) if a not in text})
    assert split == [], f"split or missing at {width}: {split[:10]}"
    lost = [n for n in names if n.rsplit(".", 1)[-1] not in text]
    assert lost == [], lost
    if not terminal:
        assert not BOX & set(text), "plain text must not draw boxes"


def test_module_names_are_abbreviated_from_the_middle() -> None:
    text = render(CASES["layers"], 80, terminal=False)
    assert "bert.encoder.layer.4.attention.self.value" not in text.split("first diverging")[0]
    # the layer index is kept where it fits, so layers stay apart
    assert "bert.….4.attention.self.value" in text and "bert.….0.intermediate.dense" in text
    wide = render(CASES["layers"], 80, terminal=False, wide=True)
    assert "bert.encoder.layer.4.attention.self.value" in wide.split("first diverging")[0]
    assert max(len(x) for x in wide.splitlines()) > 80


def test_the_per_module_table_says_how_many_rows_and_shows_every_amplifier() -> None:
    text = render(CASES["layers"], 200, terminal=False)
    assert "Per-module error against fp64 (target bf16): 12 of 112 leaf modules" in text
    assert "full table in the HTML report and verdict.json" in text
    numerics = CASES["layers"].numerics
    assert numerics is not None and numerics.layers is not None
    table = text.split("Per-module error")[1].split("err: relative error")[0]
    for module in numerics.layers.top_amplification:
        assert module in table
    assert "first, top" not in table and "top 1" in table and "first" in table


def test_at_80_columns_the_module_table_leads_with_the_first_and_the_amplifiers() -> None:
    """Whatever layer they sit in (layer 0, 4 and 9 here), the first diverging module and
    the top amplifiers are the table's first rows, in that order."""
    text = render(CASES["layers"], 80, terminal=False)
    table = text.split("Per-module error")[1].split("err: relative error")[0]
    rows = [line for line in table.splitlines() if line.strip().startswith("bert.")]
    flags = [row.split()[-1] for row in rows[:4]]
    assert flags == ["first", "1", "2", "3"]  # "top 1" ... split on spaces
    assert "bert.….4.attention.self.value" in rows[0]
    assert "bert.….0.intermediate.dense" in rows[1] and ".9.output.dense" in rows[3]


def test_results_use_one_vocabulary() -> None:
    text = render(CASES["tokens"], 120, terminal=False)
    row = next(line for line in text.splitlines() if "generated tokens" in line)
    assert "INFO" in row and "PASS" not in row
    failed = render(CASES["fails-quality"], 120, terminal=False)
    assert "Speed  WITHHELD" in failed and "Withheld" not in failed
    assert "info" not in {w for line in failed.splitlines() for w in line.split()}


def test_a_failed_side_shows_its_stderr_where_it_fits() -> None:
    text = render(CASES["failed-target"], 80, terminal=False)
    assert "the target's stderr ends with:" in text and "RuntimeError: planted" in text
    assert "FAIL: the target fails a gate" in text
