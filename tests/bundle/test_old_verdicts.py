"""Verdicts of older schema versions: read, and brought up to this version's schema
without losing what they said; a newer one refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parity.errors import BundleError
from parity.model.verdict import Verdict

GOLDEN = Path(__file__).parents[1] / "golden"


def test_a_verdict_of_schema_1_is_still_read_and_keeps_what_it_said(tmp_path: Path) -> None:
    """Version 1 said some findings as sentences (``withheld``, ``speed.contention``,
    ``speed.placements.said``); read back, each is a finding that says it as it was."""
    from parity.bundle import read_verdict
    from parity.model.verdict import VERDICT_SCHEMA

    old = json.loads((GOLDEN / "schema1-verdict-fails-quality.json").read_text())
    assert "schema_version" not in old and isinstance(old["withheld"], str)
    (tmp_path / "verdict.json").write_text(json.dumps(old))
    verdict, _ = read_verdict(tmp_path)
    assert verdict.schema_version == VERDICT_SCHEMA
    assert verdict.withheld is not None and verdict.withheld.figures["text"] == old["withheld"]
    passes = json.loads((GOLDEN / "verdict-passes.json").read_text())
    passes.pop("schema_version")
    passes.pop("findings", None)
    passes["speed"].pop("findings", None)
    passes["speed"]["contention"] = "other processes held the cores"
    (tmp_path / "verdict.json").write_text(json.dumps(passes))
    verdict, _ = read_verdict(tmp_path)
    assert verdict.speed is not None
    assert [(f.code, f.figures["text"]) for f in verdict.speed.findings] == [
        ("speed.note", "other processes held the cores")
    ]


def test_a_verdict_newer_than_this_parity_is_refused_in_one_line(tmp_path: Path) -> None:
    from parity.bundle import read_verdict

    newer = json.loads((GOLDEN / "verdict-passes.json").read_text())
    newer["schema_version"] = 99
    (tmp_path / "verdict.json").write_text(json.dumps(newer))
    with pytest.raises(BundleError, match="verdict schema version 99, newer than"):
        read_verdict(tmp_path)


def test_a_verdict_of_schema_2_is_read_with_its_checks_coded_and_its_steadiness_apart(
    tmp_path: Path,
) -> None:
    """Version 2 named the speed checks by their words, said what each saw in a sentence,
    and kept the machine's pace check, the thread placements and the busy-core findings
    among the speed section's own parts; read back, each check has its code and its
    sentence as a finding, and the machine's parts are in ``speed.steadiness``."""
    from parity.bundle import read_verdict
    from parity.report import words

    old = json.loads((GOLDEN / "schema2-verdict-steadiness.json").read_text())
    assert old["schema_version"] == 2
    (tmp_path / "verdict.json").write_text(json.dumps(old))
    verdict, _ = read_verdict(tmp_path)
    speed = verdict.speed
    assert speed is not None and speed.steadiness is not None
    assert [c.name for c in speed.compliance] == ["speed.reseeded"]
    assert [c.name for c in speed.steadiness.checks] == ["speed.pace"]
    assert speed.unreliable_because == ("speed.pace",) and not speed.reliable
    for was, now in zip(old["speed"]["compliance"], speed.checks(), strict=True):
        assert words.says(now.finding) == was["detail"]  # said as it was
        assert words.check(now.name) == was["name"]
    placements = speed.steadiness.placements
    assert placements is not None and placements.quicker.processes == 16
    assert [f.code for f in speed.findings] == ["speed.unreliable"]
    assert [f.code for f in speed.steadiness.findings] == ["speed.waited"]
    assert speed.findings[0].figures["failed"] == ["speed.pace"]
    assert words.says(speed.findings[0]).startswith(
        "the speed claim is unreliable: machine pace held while measuring failed"
    )


def test_a_verdict_of_schema_3_is_read_with_its_sentences_as_notes(tmp_path: Path) -> None:
    """Version 3 said why there is no cost verdict, a cost's basis, why no module is named
    and the cost's sensitivity in sentences; read back, each says what it said."""
    from parity.bundle import read_verdict
    from parity.report import words

    old = json.loads((GOLDEN / "schema3-verdict-sentences.json").read_text())
    assert old["schema_version"] == 3
    (tmp_path / "verdict.json").write_text(json.dumps(old))
    verdict, _ = read_verdict(tmp_path)
    cost, numerics = verdict.cost, verdict.numerics
    assert cost is not None and cost.reason is not None and cost.sensitivity is not None
    assert numerics is not None and numerics.not_localised is not None
    assert words.says(cost.reason) == old["cost"]["reason"]
    assert cost.baseline.basis is not None
    assert words.says(cost.baseline.basis) == old["cost"]["baseline"]["basis"]
    assert words.sensitivity(cost.sensitivity) == old["cost"]["sensitivity"]["text"]
    assert words.says(numerics.not_localised) == old["numerics"]["not_localised"]
    # the gates said their results in sentences, read as they are
    assert [words.gate(g) for g in verdict.gates] == [g["detail"] for g in old["gates"]]


def test_a_verdict_of_schema_4_is_read_with_its_tuning_said_as_it_was(tmp_path: Path) -> None:
    """Version 4 labelled asymmetric tuning, each setting's effect and how tuning was read
    in sentences; read back, the words say what it said."""
    from parity.bundle import read_verdict
    from parity.report import words

    old = json.loads((GOLDEN / "schema4-verdict-tuning.json").read_text())
    assert old["schema_version"] == 4
    (tmp_path / "verdict.json").write_text(json.dumps(old))
    verdict, _ = read_verdict(tmp_path)
    tuning = verdict.tuning
    assert tuning is not None and tuning.label is not None
    assert words.says(tuning.label) == old["tuning"]["label"]
    assert words.method(tuning.method) == old["tuning"]["method"]
    was = old["tuning"]["optimisations"]
    assert [words.bias(o) for o in tuning.optimisations] == [o["bias"] for o in was]


def test_the_tuning_words_say_what_version_4_said() -> None:
    """The judge's codes for tuning say, word for word, what version 4's sentences said."""
    from parity.model.codec import decode
    from parity.model.fair import Tuning
    from parity.report import words

    old = json.loads((GOLDEN / "schema4-verdict-tuning.json").read_text())["tuning"]
    golden = json.loads((GOLDEN / "verdict-fair-rules.json").read_text())["tuning"]
    now = decode(Tuning, golden)
    assert now.label is not None and now.label.code == "tuning.asymmetric"
    assert words.says(now.label) == old["label"]
    assert words.method(now.method) == old["method"]


def _schema6(tmp_path: Path, name: str) -> tuple[dict[str, Any], Verdict, Verdict]:
    """A verdict of version 6 as written, as read back, and the same case judged now."""
    from parity.bundle import read_verdict
    from parity.model.codec import decode

    old = json.loads((GOLDEN / f"schema6-verdict-{name}.json").read_text())
    assert old["schema_version"] == 6
    (tmp_path / "verdict.json").write_text(json.dumps(old))
    verdict, _ = read_verdict(tmp_path)
    now = decode(Verdict, json.loads((GOLDEN / f"verdict-{name}.json").read_text()))
    return old, verdict, now


def test_version_6_latency_limits_are_read_and_the_words_say_what_it_said(
    tmp_path: Path,
) -> None:
    """Version 6 said each latency limit's check, the rule and the failing gate in
    sentences; read back they say the same, and the judge's figures and codes today say
    them word for word."""
    from parity.report import words

    old, read, now = _schema6(tmp_path, "fair-rules")
    said = [
        c["detail"] for role in ("baseline", "target") for c in old["slo"]["sides"][role]["checks"]
    ]
    for v in (read, now):
        assert v.slo is not None
        checks = [*v.slo.sides.baseline.checks, *v.slo.sides.target.checks]
        assert [words.slo_check(c) for c in checks] == said
        assert words.method(v.slo.rule) == old["slo"]["rule"]
        # the latency limits' gate (the quality gate's undecided gates moved on: 54a682b)
        limits = [words.gate(g) for g in v.gates if g.name == "latency limits"]
        assert limits and limits == [
            g["detail"] for g in old["gates"] if g["name"] == "latency limits"
        ]
    assert now.slo is not None and all(c.detail is None for c in now.slo.sides.target.checks)


def test_a_verdict_of_schema_6_is_read_with_its_quality_sentences_as_they_were(
    tmp_path: Path,
) -> None:
    """Version 6 said why a quality check has no figure, and a side's determinism, in
    sentences; read back, the words say what it said."""
    from parity.bundle import read_verdict
    from parity.report import words

    old = json.loads((GOLDEN / "schema6-verdict-sentences.json").read_text())
    assert old["schema_version"] == 6
    (tmp_path / "verdict.json").write_text(json.dumps(old))
    verdict, _ = read_verdict(tmp_path)
    q = verdict.quality
    assert q is not None and q.determinism is not None
    was = old["quality"]
    assert [words.detail(c) for c in q.checks] == [c.get("detail") for c in was["checks"]]
    assert [words.detail(d) for _, d in q.determinism.items()] == [
        d.get("detail") for d in was["determinism"].values()
    ]
    assert words.method(q.method) == was["method"]


def test_the_quality_words_say_what_version_6_said() -> None:
    """The judge's codes for the quality section say, word for word, what version 6's
    sentences said (the same comparison, judged then and now)."""
    from parity.model.codec import decode
    from parity.model.quality import Quality, TrajectoryCheck
    from parity.report import words

    old = json.loads((GOLDEN / "schema6-verdict-sentences.json").read_text())["quality"]
    new = json.loads((GOLDEN / "verdict-bf16-localisation.json").read_text())["quality"]
    now = decode(Quality, new)
    assert now.determinism is not None
    assert any(c.finding is not None for c in now.checks) or now.determinism.baseline.finding
    assert [words.detail(c) for c in now.checks] == [c.get("detail") for c in old["checks"]]
    assert [words.detail(d) for _, d in now.determinism.items()] == [
        d.get("detail") for d in old["determinism"].values()
    ]
    assert words.method(now.method) == old["method"]
    rules = [words.trajectory_rule(c) for c in now.checks if isinstance(c, TrajectoryCheck)]
    assert rules and rules == [c["rule"] for c in old["checks"] if c["kind"] == "trajectory"]


@pytest.mark.parametrize(
    ("old_name", "new_name"),
    [
        ("schema6-verdict-sentences", "bf16-localisation"),
        ("schema6-verdict-fair-rules", "fair-rules"),
    ],
)
def test_the_quality_gate_words_say_what_version_6_said(old_name: str, new_name: str) -> None:
    """Version 6's quality gate, gates not decided and method, read back, say what it
    said; today's codes say the method word for word and the gate's result as it did
    (which gates a comparison leaves undecided, and how their label reads, have moved on
    since: 54a682b, 5f0d5bf)."""
    from parity.bundle.old_verdicts import current_verdict
    from parity.model.codec import decode
    from parity.model.verdict import Verdict
    from parity.report import words

    old = json.loads((GOLDEN / f"{old_name}.json").read_text())
    was = next(g["detail"] for g in old["gates"] if g["name"] == "quality")
    then = decode(Verdict, current_verdict(Path(old_name), old))
    assert then.quality is not None
    assert words.gate(next(g for g in then.gates if g.name == "quality")) == was
    assert words.undecided(then.quality) == old["quality"]["undecided"]
    assert words.method(then.quality.method) == old["quality"]["method"]
    now = decode(Verdict, json.loads((GOLDEN / f"verdict-{new_name}.json").read_text()))
    assert now.quality is not None and now.quality.method.startswith("quality.")
    assert words.method(now.quality.method) == old["quality"]["method"]
    gate = next(g for g in now.gates if g.name == "quality")
    assert gate.finding is not None and gate.detail is None
    assert words.gate(gate).split(";")[0] == was.split(";")[0]


def test_version_6_workload_shape_is_read_and_the_words_say_what_it_said(tmp_path: Path) -> None:
    """Version 6 said each dimension of the workload's shape, its summary and the
    representative-workload item in sentences; read back they say the same, and the
    judge's figures and codes today say them word for word."""
    from parity.report import words

    old, read, now = _schema6(tmp_path, "fair-rules")
    was = old["representativeness"]
    for v in (read, now):
        r = v.representativeness
        assert r is not None
        assert [words.shape_row(x) for x in r.rows] == [x["text"] for x in was["rows"]]
        assert words.shape(r) == was["summary"]
        # what the view shows: a checked item's evidence, an open one's how to check it
        shown = [
            (u.item, words.unproven_evidence(u) if u.checked else words.unproven_how(u))
            for u in v.unproven
        ]
        was_shown = [
            (u["item"], u["evidence"] if u["checked"] else u["how_to_check"])
            for u in old["unproven"]
        ]
        assert shown == was_shown
    r = now.representativeness
    assert r is not None and r.summary is None and all(x.text is None for x in r.rows)


def test_version_6_fit_is_read_and_the_words_say_what_it_said(tmp_path: Path) -> None:
    """Version 6 said how each part of a projected peak was made, each side's fit and the
    method in sentences; read back they say the same, and the judge's figures and codes
    today say them word for word."""
    from parity.report import words

    old, read, now = _schema6(tmp_path, "fair-rules")
    was = old["fit"]
    for v in (read, now):
        f = v.fit
        assert f is not None and f.sides is not None
        assert words.method(f.method) == was["method"]
        for role, side in f.sides.items():
            assert words.fit(side) == was["sides"][role]["summary"]
            said = [p["how"] for p in was["sides"][role]["parts"]]
            assert [words.part_how(p) for p in side.parts] == said
    assert now.fit is not None and now.fit.sides is not None
    assert now.fit.sides.target.summary is None and now.fit.sides.target.parts[0].how is None


def test_a_fit_not_projected_says_why_as_version_6_did(tmp_path: Path) -> None:
    """Version 6 said why a fit was not projected in a sentence: read as it was; the
    judge's code today says it word for word."""
    from parity.bundle import read_verdict
    from parity.judge.fit import judge_fit
    from parity.model.roles import ByRole
    from parity.report import words

    old, _, now = _schema6(tmp_path, "fair-rules")
    was = {**old, "fit": {"available": False, "method": old["fit"]["method"], "reason": "r"}}
    (tmp_path / "verdict.json").write_text(json.dumps(was))
    read, _ = read_verdict(tmp_path)
    assert read.fit is not None and words.fit_reason(read.fit) == "r"
    fit = judge_fit(now.workload.description, None, ByRole(baseline=None, target=None))
    assert words.fit_reason(fit) == (
        "no production shape declared ([production] in the plan, --production): fit at "
        "production size not checked"
    )


def test_version_6_localisation_rule_is_read_and_the_words_say_what_it_said(
    tmp_path: Path,
) -> None:
    """Version 6 said the localisation's rule and where its expected errors came from in
    sentences; read back the rule says the same, and the judge's code and figures today
    say it word for word."""
    from parity.bundle import read_verdict
    from parity.model.codec import decode
    from parity.report import words

    old = json.loads((GOLDEN / "schema6-verdict-sentences.json").read_text())
    (tmp_path / "verdict.json").write_text(json.dumps(old))
    read, _ = read_verdict(tmp_path)
    now = decode(Verdict, json.loads((GOLDEN / "verdict-bf16-localisation.json").read_text()))
    was = old["numerics"]["layers"]
    for v in (read, now):
        assert v.numerics is not None and v.numerics.layers is not None
        assert words.localisation_rule(v.numerics.layers) == was["rule"]
    assert now.numerics is not None and now.numerics.layers is not None
    assert now.numerics.layers.expected_run == "cpu+bf16" and now.numerics.layers.expected is None
