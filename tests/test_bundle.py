"""Bundles: atomic writes, the digest verified, strict typed documents, one-line refusals."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from parity.bundle import (
    DIGEST,
    MANIFEST,
    METRICS,
    OUTPUT_TENSORS,
    finalize,
    load_bundle,
    seal,
    temp_dir_for,
    write_doc,
    write_json,
)
from parity.errors import BundleError
from parity.model.spec import parse_side
from parity.model.verdict import Verdict
from tests.fixtures import bundles

GOLDEN = Path(__file__).parent / "golden"


def make_bundle(path: Path, status: str = "ok") -> Path:
    man = bundles.manifest(role="baseline", spec="cpu", status=status)  # type: ignore[arg-type]
    metrics = bundles.metrics([0.5, 0.1, 0.1, 0.1]) if status == "ok" else None
    return bundles.write_bundle(path, man, run_metrics=metrics, tensors={"y": torch.ones(2)})


def test_write_json_is_atomic_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_json(target, {"x": 1})
    write_json(target, {"x": 2})
    assert json.loads(target.read_text()) == {"x": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_write_json_refuses_nan_before_touching_the_file(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_json(target, {"x": 1})
    with pytest.raises(ValueError):
        write_json(target, {"x": float("nan")})
    assert json.loads(target.read_text()) == {"x": 1}


def test_a_bundle_appears_only_when_finalized_and_sealed(tmp_path: Path) -> None:
    final = tmp_path / "side"
    tmp = temp_dir_for(final)
    write_doc(tmp / MANIFEST, bundles.manifest(role="run", spec="cpu", status="failed"))
    (tmp / "stderr.log").write_text("token ghp_" + "a" * 36 + "\n")
    assert not final.exists()
    finalize(tmp, final)
    assert (final / DIGEST).is_file() and not tmp.exists()
    assert "ghp_" not in (final / "stderr.log").read_text()  # logs redacted before sealing
    assert load_bundle(final).status == "failed"


def test_load_round_trip(tmp_path: Path) -> None:
    b = load_bundle(make_bundle(tmp_path / "b"))
    assert b.ok and b.side == parse_side("cpu") and b.metrics is not None
    assert b.fingerprint == b.manifest.workload.parts.digest()
    y = b.output_tensors()["y"]  # read back as a numpy array, without torch
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    assert np.array_equal(y, np.ones(2))


def test_a_failed_bundle_needs_no_metrics(tmp_path: Path) -> None:
    b = load_bundle(make_bundle(tmp_path / "b", status="failed"))
    assert not b.ok and b.metrics is None and b.outputs is None


def _edit_json(name: str, change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        data = json.loads((path / name).read_text())
        change(data)
        (path / name).write_text(json.dumps(data))

    return edit


#: edits found by the digest (nothing else is read before it)
EDITED = [
    (_edit_json(METRICS, lambda d: d.update(step_samples_s=[10.0] * 4)), "metrics.json differs"),
    (lambda p: (p / "extra.json").write_text("{}"), "was added after the bundle"),
    (lambda p: (p / METRICS).unlink(), "metrics.json is missing"),
    (lambda p: (p / DIGEST).unlink(), "has no digest.json"),
    (lambda p: (p / OUTPUT_TENSORS).write_bytes(b"garbage"), "numerics.safetensors differs"),
    (lambda p: os.symlink("/etc/hostname", p / "stolen.log"), "which is a link"),
    (lambda p: (p / "model.pkl").write_bytes(b"\x80\x04K\x01."), "not JSON, a log or safetensors"),
    (lambda p: (p / MANIFEST).unlink(), "has no manifest.json"),
    (lambda p: (p / MANIFEST).write_text('{"schema_ver'), "not valid JSON"),
    (_edit_json(MANIFEST, lambda d: d.update(schema_version=1)), "schema version 1, written by"),
    (_edit_json(MANIFEST, lambda d: d.update(schema_version=99)), "newer than this parity"),
]
#: edits a consistent digest lets through to the strict decoder
DECODED = [
    (_edit_json(MANIFEST, lambda d: d.update(surprise=1)), "$.surprise is not a known key"),
    (_edit_json(MANIFEST, lambda d: d.update(status="weird")), "$.status expected one of"),
    (_edit_json(METRICS, lambda d: d.update(steady_from_step="1")), "expected a whole number"),
    (
        _edit_json(MANIFEST, lambda d: d["workload"].update(fingerprint="f" * 64)),  # type: ignore[attr-defined]
        "fingerprint that does not match its parts",
    ),
    (lambda p: (p / METRICS).write_text('{"units": NaN}'), "not valid JSON"),
    (lambda p: (p / METRICS).write_text('{"a": 1, "a": 2}'), "duplicate key"),
]


@pytest.mark.parametrize(("damage", "words"), EDITED + DECODED)
def test_damaged_bundles_are_refused_in_one_line(
    tmp_path: Path, damage: Callable[[Path], None], words: str
) -> None:
    path = make_bundle(tmp_path / "b")
    damage(path)
    if (damage, words) in DECODED:
        (path / DIGEST).unlink()
        seal(path)
    with pytest.raises(BundleError) as info:
        load_bundle(path).output_tensors()
    assert words in str(info.value) and "\n" not in str(info.value)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="does not exist"):
        load_bundle(tmp_path / "nope")


def test_a_reference_holding_the_probe_alone_is_refused_not_judged(tmp_path: Path) -> None:
    """One schema policy: an ok fp64 reference holds its whole run (metrics and outputs)
    beside the probe; one with the probe alone (as written before whole-run references)
    is refused when loaded, never judged as a reference without a run."""
    from tests.judge.numerics_cases import capture, reference_values

    man = bundles.manifest(role="reference", spec="cpu", mode="reference")
    probe = capture(reference_values(), None)
    for name in ("", METRICS, "numerics.json"):
        path = bundles.write_bundle(
            tmp_path / f"without-{name}", man, run_metrics=bundles.metrics([0.1] * 4), capture=probe
        )
        if not name:  # the whole run
            assert load_bundle(path).outputs is not None
            continue
        (path / DIGEST).unlink()
        (path / name).unlink()
        seal(path)
        with pytest.raises(BundleError, match=f"ok reference bundle without {name}"):
            load_bundle(path)


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
        assert [words.gate(g) for g in v.gates] == [g["detail"] for g in old["gates"]]
    assert now.slo is not None and all(c.detail is None for c in now.slo.sides.target.checks)
