"""No figure measured on one machine in a docstring or comment of ``src/``: the code says
why, and figures live in ``benchmarks/README.md`` with their machine, load and date.

What counts as such a figure is a number with a unit (s, ms, µs, %, x, MiB, ...) tied to
where it was measured ("here", "this machine", "this 2-vCPU VM", "on the H200",
``benchmarks/README``) or to a measurement ("took 14-34 s"). Figures of a simulation, a
default or a threshold name neither, and pass.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "parity"
UNIT = r"\d[\d.,]*\s?(?:ms|µs|us|ns|s|min|minutes?|seconds?|hours?|%|x|MiB|GiB|TFLOP/s)(?![\w/])"
WHERE = (
    r"here|this (?:[\w-]+ )?(?:VM|machine)|(?:2|two)[- ](?:vCPU|core)|H200|the lent"
    r"|benchmarks/README"
)
FIGURE = re.compile(
    rf"\b(?:{WHERE})\b[^.;]{{0,80}}?{UNIT}"
    rf"|{UNIT}[^.;]{{0,80}}?\b(?:{WHERE})\b"
    rf"|\b(?:took|measured|read)\s[^.;]{{0,30}}?{UNIT}",
    re.I,
)


def prose(source: str) -> list[tuple[int, str]]:
    """The comments (consecutive lines joined) and string statements (docstrings, and the
    strings documenting attributes) of a module, with their first line."""
    comments: list[tuple[int, int, str]] = []  # first line, last line, text
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            line, text = tok.start[0], tok.string.lstrip("#: ")
            if comments and comments[-1][1] == line - 1:
                first, _, before = comments[-1]
                comments[-1] = (first, line, f"{before} {text}")
            else:
                comments.append((line, line, text))
    found = [(first, text) for first, _, text in comments]
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Expr):
            continue
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.append((node.lineno, node.value.value))
    return found


def figures(source: str) -> list[str]:
    return [
        f"{line}: {' '.join(m.group(0).split())}"
        for line, text in prose(source)
        for m in FIGURE.finditer(text)
    ]


def test_no_docstring_or_comment_in_src_carries_a_machine_s_figure() -> None:
    found = [
        f"{path.relative_to(SRC.parent)}:{hit}"
        for path in sorted(SRC.rglob("*.py"))
        for hit in figures(path.read_text())
    ]
    assert found == [], "say why, not what one machine measured:\n" + "\n".join(found)


def test_the_rule_finds_figures_tied_to_a_machine() -> None:
    bad = [
        '"""A fixed cap bought nothing: 30 rounds of gpt-train tiny took 14-34 s here."""',
        "# that takes most of a second (0.7-0.9 s on this 2-vCPU machine)",
        "# the suite's first cluster test took 220 s in three runs",
        "x = 1  # a stalled process's slice (8 ms here)",
        "# on a 2-core machine the spread was 2-5% (benchmarks/README.md)",
    ]
    assert [len(figures(line)) for line in bad] == [1] * len(bad)


def test_the_rule_leaves_defaults_thresholds_and_simulations() -> None:
    good = [
        '"""Seconds per process before it is stopped (default: 900 s)."""',
        "# a 98% prediction interval for one more process",
        "# simulated A/A comparisons are called indistinguishable 96-97% of the time",
        "# as a loaded machine's can, by several times either way, rules out 1.5x",
        '"""Nothing here imports torch."""',
        "# where the steps pass 4x what the quality run's pace gives them, at least 1 s",
    ]
    assert [figures(line) for line in good] == [[]] * len(good)
