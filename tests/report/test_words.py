"""Every finding and check code the judge emits has its words (``parity.report.words``),
so no renderer falls back to a bare code and figures."""

from __future__ import annotations

import ast
from pathlib import Path

import parity.judge
from parity.model.findings import Finding
from parity.report import words

JUDGE = Path(parity.judge.__file__).parent


def emitted() -> tuple[set[str], set[str]]:
    """The finding codes (``code=`` of a ``Finding``) and check codes (``name=`` of a
    ``ComplianceCheck``, or a module constant ending ``_CHECK``) written in the judge."""
    codes: set[str] = set()
    checks: set[str] = set()
    for path in JUDGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "code"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                codes.add(node.value.value)
            if (  # a module's own finding maker: found("quality.baseline-zeros", ...)
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "found"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                codes.add(node.args[0].value)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if any(n.endswith("_CHECK") for n in names):
                    checks.add(str(node.value.value))
    from parity.judge.speed import COMPLIANCE_RUNS

    checks.update(code for _, code, _ in COMPLIANCE_RUNS)
    return codes, checks


def test_every_code_the_judge_emits_has_words() -> None:
    codes, checks = emitted()
    assert {"speed.contention", "speed.pace-change", "speed.run-judged"} <= codes
    assert {"quality.baseline-zeros", "quality.one-repeat"} <= codes
    assert {"speed.pace", "speed.load", "speed.reseeded", "speed.same-input"} <= checks
    assert codes - set(words.WORDS) == set()
    assert checks - set(words.CHECKS) == set()


def test_a_code_without_words_is_said_by_its_code_and_figures() -> None:
    odd = Finding(code="speed.nothing-like-it", severity="context", figures={"x": 1})
    assert words.says(odd) == "speed.nothing-like-it (x 1)"
    assert words.check("speed.nothing-like-it") == "speed.nothing-like-it"
