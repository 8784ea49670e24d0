"""The parts of a view: a table's rows have its columns' cells."""

from __future__ import annotations

import pytest

from parity.report.parts import Row, Section, Sentence, View, table


def test_a_row_with_the_wrong_number_of_cells_is_refused() -> None:
    with pytest.raises(ValueError, match="a row has 1 cells for 2 columns"):
        table([("a", "text"), ("b", "number")], [("x",)], title="t")


def test_a_view_finds_its_sections() -> None:
    section = Section(key="k", title="K", result="INFO", parts=(Sentence(text="s"),))
    view = View(title="T", result="PASS", subtitle="S", sections=(section,))
    assert view.section("k") is section and view.section("x") is None
    assert not section.empty and Section(key="e", title="E", result="INFO", parts=()).empty
    made = table([("a", "text")], [Row(cells=("1",), highlight=True)])
    assert made.rows[0].highlight and not made.columns[0].right
