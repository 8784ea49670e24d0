"""The verdict on one screen: the decision first, one line per gate family and figure,
the findings that change the reading, and where the rest is; nothing lost from the full
view, ``verdict.json`` or the HTML report."""

from __future__ import annotations

import pytest

from parity.model.codec import dumps
from parity.model.verdict import Verdict
from parity.report import words
from parity.report.screen import MOST, build_screen
from parity.report.terminal import render_terminal
from tests.report.cases import ANSI, cases, printed
from tests.report.cases import page as case_page

CASES = cases()


def screen(v: Verdict, width: int = 100, *, terminal: bool = False) -> str:
    return printed(lambda c: render_terminal(v, c, out="OUT"), width, terminal=terminal)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", list(CASES))
def test_the_screen_fits_and_leads_with_the_decision(name: str) -> None:
    v = CASES[name]
    text = screen(v)
    lines = text.splitlines()
    assert len(lines) <= (40 if v.passed else 45), text
    assert all(len(line) <= 100 for line in lines)
    first = lines[0]
    assert first.startswith(("PASS: ", "FAIL: ", "NOT DECIDED: ")), first
    assert "speed " in first and "cost" in first
    for label in ("quality", "speed"):
        assert any(line.startswith(label) for line in lines), label
    assert "parity explain OUT [SECTION]" in flat(text)


@pytest.mark.parametrize("width", [40, 60, 80])
@pytest.mark.parametrize("name", list(CASES))
def test_every_line_of_the_screen_fits_a_narrow_terminal(name: str, width: int) -> None:
    raw = screen(CASES[name], width, terminal=True)
    assert all(len(line) <= width for line in ANSI.sub("", raw).splitlines())


def test_a_failing_comparison_names_the_gate_and_the_first_diverging_module() -> None:
    v = CASES["bf16-localisation"]
    text = flat(screen(v))
    assert text.startswith("FAIL: quality fails")
    assert "first diverging module: layers.3" in text
    assert "speed withheld" in text and "no speed or cost verdict" in text


def test_the_speed_line_has_ratio_interval_word_and_processes() -> None:
    v = CASES["passes"]
    assert v.speed is not None
    line = next(x for x in screen(v, 200).splitlines() if x.startswith("speed"))
    ci = v.speed.interval
    assert f"{v.speed.ratio:.3f} [{ci.low:.3f}, {ci.high:.3f}]" in line
    assert "faster" in line
    assert f"{v.speed.repeats.baseline} baseline and {v.speed.repeats.target} target" in line


def test_an_undetermined_speed_says_in_one_line_what_settles_it() -> None:
    for name in ("undetermined", "too-noisy-to-call"):
        line = next(x for x in screen(CASES[name], 400).splitlines() if x.startswith("speed"))
        assert "undetermined" in line and "would settle it (--repeats " in line, line


def test_the_findings_that_change_the_reading_come_with_their_action() -> None:
    v = CASES["busy"]
    made = build_screen(v)
    assert 0 < len(made.findings) <= MOST
    said, action = made.findings[0]
    assert said.startswith("busy cores widened the interval")
    assert action is not None and "--baseline cpu+threads=1" in action
    assert "busy cores widened the interval" in flat(screen(v))


@pytest.mark.parametrize("name", list(CASES))
def test_nothing_is_lost_every_finding_is_in_verbose_html_and_json(name: str) -> None:
    """The finding codes of the verdict are the codes verdict.json carries, and each one's
    words are in the full terminal view and in the HTML report."""
    v = CASES[name]
    codes = {f.code for f in v.all_findings()}
    assert codes == {c for c in codes if f'"code": "{c}"' in dumps(v)}
    verbose = flat(printed(lambda c: render_terminal(v, c, verbose=True), 100))
    page = case_page(name)
    for finding in v.all_findings():
        said = words.says(finding)
        assert flat(said) in verbose, finding.code
        assert flat(said).replace("'", "&#x27;") in flat(page), finding.code


def test_every_code_has_words() -> None:
    for name, v in CASES.items():
        for finding in v.all_findings():
            assert finding.code in words.WORDS, (name, finding.code)


def test_a_failing_comparison_with_no_module_named_says_why_on_the_screen() -> None:
    from dataclasses import replace

    v = CASES["fails-quality"]
    assert v.numerics is not None
    from parity.model.findings import Finding

    cut = Finding(
        code="numerics.probe-cut",
        severity="reading",
        figures={"roles": ["baseline", "target"], "why": "skipped", "budget_s": 83.0},
    )
    text = flat(screen(replace(v, numerics=replace(v.numerics, not_localised=cut))))
    assert "no module is named: the baseline and target's numerics probes were skipped" in text
    assert "--budget 83 runs them" in text


@pytest.mark.parametrize("name", list(CASES))
def test_no_code_is_shown_for_its_words(name: str) -> None:
    """A code the judge gives (a finding's, a method's, how to check an item) is said by
    its words in every view, never shown as it is."""
    v = CASES[name]
    codes = set(words.WORDS) | set(words.METHODS) | set(words.HOWS)
    verbose = flat(printed(lambda c: render_terminal(v, c, verbose=True), 400))
    page = case_page(name)
    for text in (verbose, page):
        shown = {code for code in codes if code in text}
        assert shown == set(), shown
