"""Text layout: lines fit, words stay whole, names shrink from the middle."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parity.report.layout import (
    abbreviate,
    column_widths,
    fit_cell,
    min_width,
    segments,
    table_lines,
    text_lines,
    width_of,
    wrap,
)
from parity.report.parts import Row, table

NAME = "bert.encoder.layer.11.attention.output.dense"


def test_breaks_fall_after_dots_and_slashes_but_never_inside_a_number() -> None:
    assert segments(NAME) == [
        "bert.",
        "encoder.",
        "layer.",
        "11.",
        "attention.",
        "output.",
        "dense",
    ]
    assert segments("1.5e-04") == ["1.5e-04"]
    assert segments("3.11.7") == ["3.11.7"]
    assert segments("runs/a/r00") == ["runs/", "a/", "r00"]
    assert segments("neuron+bf16") == ["neuron+", "bf16"]


def test_abbreviation_keeps_the_last_parts_and_an_index() -> None:
    assert abbreviate(NAME, 100) == NAME
    assert abbreviate(NAME, 40) == "bert.encoder.….11.attention.output.dense"
    assert abbreviate(NAME, 37) == "bert.….11.attention.output.dense"
    assert abbreviate(NAME, 20) == "bert.….11.dense"
    assert abbreviate("bert.encoder.layer.attention.output.dense", 30) == (
        "bert.….attention.output.dense"
    )
    assert abbreviate(NAME, 5) is None
    short = abbreviate(NAME, min_width(NAME, "name"))
    assert short is not None and short.endswith(".dense")


@given(
    st.lists(st.text(alphabet="abcdefgh_", min_size=1, max_size=9), min_size=2, max_size=9).map(
        ".".join
    ),
    st.integers(min_value=1, max_value=60),
)
def test_a_name_fits_any_width_from_its_minimum_and_keeps_its_last_part(
    name: str, extra: int
) -> None:
    width = min_width(name, "name") + extra - 1
    lines = fit_cell(name, "name", width)
    assert all(len(line) <= width for line in lines)
    assert name.rsplit(".", 1)[-1] in "".join(lines)
    short = abbreviate(name, width)
    assert short is None or (len(short) <= width and len(lines) == 1)


words = st.lists(
    st.one_of(
        st.text(alphabet="abcxyz", min_size=1, max_size=12),
        st.lists(st.text(alphabet="abc", min_size=1, max_size=6), min_size=2, max_size=6).map(
            ".".join
        ),
        st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda x: f"{x:.3g}"),
    ),
    min_size=1,
    max_size=30,
).map(" ".join)


@given(words, st.integers(min_value=1, max_value=90))
def test_wrapping_fits_and_keeps_every_word_whole(text: str, extra: int) -> None:
    width = max(min_width(text), 1) + extra - 1
    lines = wrap(text, width)
    assert all(len(line) <= width for line in lines)
    joined = " ".join(lines)
    for word in text.split():
        for piece in segments(word):
            assert piece in joined
    assert "".join(joined.split()) == "".join(text.split())


def test_sentences_hang_their_continuation_lines() -> None:
    lines = text_lines("one two three four five six seven", 12, indent=2)
    assert [width_of(x) <= 12 for x in lines] == [True] * len(lines)
    assert all(line[0][0].startswith("  ") for line in lines[1:])


def test_columns_shrink_to_fit_and_give_up_when_they_cannot() -> None:
    t = table(
        [("module", "name"), ("detail", "text"), ("value", "number")],
        [(NAME, "a long detail that can wrap at any space", "1.00e-04")],
    )
    assert column_widths(t.columns, t.rows, None) == [len(NAME), 40, 8]
    widths = column_widths(t.columns, t.rows, 50)
    assert widths is not None and sum(widths) + 4 <= 50
    assert column_widths(t.columns, t.rows, 20) is None
    lines = table_lines(t, 20)
    assert all(width_of(line) <= 20 for line in lines)
    assert any("detail:" in "".join(s for s, _ in line) for line in lines)


def test_names_that_would_read_alike_are_wrapped_instead() -> None:
    rows = [
        Row(cells=("a.b.layer.4.attention.output.dense", "x")),
        Row(cells=("a.b.layer.4.output.dense", "y")),
    ]
    t = table([("module", "name"), ("v", "text")], rows)
    text = ["".join(s for s, _ in line) for line in table_lines(t, 22)]
    assert sum("a.….4.output.dense" in x for x in text) <= 1


@pytest.mark.parametrize("width", [None, 10])
def test_a_table_has_a_header_rule_and_legend(width: int | None) -> None:
    t = table([("a", "text"), ("b", "number")], [("x", "1")], legend="b: one", title="T")
    lines = ["".join(s for s, _ in line) for line in table_lines(t, width, rule="-")]
    assert lines[0] == "T" and lines[-1] == "b: one" and set(lines[2]) <= {"-", " "}


@given(width=st.integers(min_value=24, max_value=60))
def test_a_record_s_value_goes_under_a_label_that_leaves_it_no_room(width: int) -> None:
    """Too narrow for columns: one record per row; a value that cannot sit beside a long
    label without breaking its words is put under it, indented, never one letter a line."""
    value = "train on the target, checkpoint, resume on the baseline, and compare"
    t = table(
        [("item", "text"), ("evidence, or how to check", "text"), ("took", "number")],
        [("rollback path", value, "125.42 ms (39 steps)")],
    )
    lines = ["".join(s for s, _ in line) for line in table_lines(t, width)]
    assert all(len(line) <= width for line in lines), lines
    words = " ".join(lines).split()
    assert all(w in words for w in value.split()), lines  # every word whole
    assert "125.42" in words and "ms" in words
    assert all(len(line.strip()) != 1 for line in lines), lines
