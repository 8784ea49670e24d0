"""Verdicts written by an older parity, read: each older ``verdict.json`` brought up to
this version's schema (``model.verdict.VERDICT_SCHEMA``) as JSON, before it is decoded, so
that nothing it said is lost. Bundles are never migrated (an older one is rerun); a
verdict is, because it is the record of a comparison whose bundles may be gone."""

from __future__ import annotations

from pathlib import Path

from parity.errors import BundleError
from parity.model.codec import Json
from parity.model.verdict import VERDICT_SCHEMA


def current_verdict(path: Path, raw: Json) -> Json:
    """A verdict of this version as it is; one of an older version brought up to it, so
    that nothing it said is lost: version 1 (no ``schema_version``) said some findings as
    sentences, each now a ``speed.note`` finding; version 2 named the speed checks by
    their words and said what each saw in a sentence, and kept the machine's steadiness
    among the speed section's own parts (:func:`_steadiness`)."""
    if not isinstance(raw, dict):
        return raw
    version = raw.get("schema_version", 1)
    if isinstance(version, int) and version > VERDICT_SCHEMA:
        raise BundleError(
            f"{path} has verdict schema version {version}, newer than this parity reads "
            f"({VERDICT_SCHEMA}): upgrade parity"
        )
    if version == 1:
        raw = _findings_of_sentences(raw)
    if version in (1, 2):
        speed = raw.get("speed")
        if isinstance(speed, dict):
            raw = {**raw, "speed": _steadiness(speed)}
    if version in (1, 2, 3):
        raw = _sentences_as_notes(raw)
    if version in (1, 2, 3, 4):
        raw = _tuning(raw)
    return raw


def _tuning(raw: dict[str, Json]) -> dict[str, Json]:
    """Versions 1 to 4 labelled asymmetric tuning with a sentence (a note since) and gave
    each setting's effect in words (said from the side that has it since)."""
    tuning = raw.get("tuning")
    if not isinstance(tuning, dict):
        return raw
    rows = [
        {k: v for k, v in o.items() if k != "bias"} for o in _items(tuning.get("optimisations"))
    ]
    tuning = {**tuning, "optimisations": list[Json](rows)}
    if "label" in tuning:
        tuning["label"] = _note("tuning", tuning["label"])
    return {**raw, "tuning": tuning}


def _note(section: str, text: Json) -> Json:
    """An older verdict's sentence as a finding that says it as it was (None stays)."""
    return text if not isinstance(text, str) else _said(f"{section}.note", "context", text)


def _sentences_as_notes(raw: dict[str, Json]) -> dict[str, Json]:
    """Versions 1 to 3 said why there is no cost verdict, a cost's basis and why no module
    is named in sentences, and the cost's sensitivity with its words: each sentence as a
    note, the sensitivity's confidence from the speed interval it was read over."""
    cost, numerics, speed = raw.get("cost"), raw.get("numerics"), raw.get("speed")
    if isinstance(cost, dict):
        cost = {**cost, "reason": _note("cost", cost.get("reason"))}
        for role in ("baseline", "target"):
            side = cost.get(role)
            if isinstance(side, dict) and "basis" in side:
                cost[role] = {**side, "basis": _note("cost", side["basis"])}
        sensitivity = cost.get("sensitivity")
        interval = speed.get("interval") if isinstance(speed, dict) else None
        if isinstance(sensitivity, dict):
            sensitivity = {k: v for k, v in sensitivity.items() if k != "text"}
            level = interval.get("confidence") if isinstance(interval, dict) else None
            cost["sensitivity"] = {**sensitivity, "confidence": level or 0.95}
        if cost["reason"] is None:
            cost.pop("reason")
        raw = {**raw, "cost": cost}
    if isinstance(numerics, dict) and "not_localised" in numerics:
        said = _note("numerics", numerics["not_localised"])
        raw = {**raw, "numerics": {**numerics, "not_localised": said}}
    return raw


def _findings_of_sentences(raw: dict[str, Json]) -> dict[str, Json]:
    """A version 1 verdict's sentences as findings that say them as they were."""
    withheld = raw.pop("withheld", None)
    if isinstance(withheld, str):
        raw = {**raw, "findings": [_said("decision.withheld-note", "blocks", withheld)]}
    speed = raw.get("speed")
    if isinstance(speed, dict):
        speed = dict(speed)
        said = [speed.pop("contention", None)]
        placements = speed.get("placements")
        if isinstance(placements, dict):
            placements = dict(placements)
            said.append(placements.pop("said", None))
            speed["placements"] = placements
        speed["findings"] = [
            _said("speed.note", "reading", text) for text in said if isinstance(text, str)
        ]
        return {**raw, "speed": speed}
    return raw


#: the checks on the speed claim as versions 1 and 2 named them, and their codes since
_CHECK_CODES = {
    "re-seeded run within process variation": "speed.reseeded",
    "identical input not faster than process variation": "speed.same-input",
    "machine pace held while measuring": "speed.pace",
    "the sides' processes under one load": "speed.load",
}
_COMPLIANCE_CODES = ("speed.reseeded", "speed.same-input")
#: the findings of version 2's speed section that are the machine's steadiness's since
_STEADINESS = ("speed.contention", "speed.thread-placements", "speed.waited")


def _items(value: Json) -> list[dict[str, Json]]:
    """The objects of a JSON list (nothing for anything else)."""
    return [dict(x) for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _coded(names: Json) -> list[Json]:
    """Check names of version 1 or 2 as their codes."""
    return [_CHECK_CODES.get(str(n), n) for n in names] if isinstance(names, list) else []


def _steadiness(speed: dict[str, Json]) -> dict[str, Json]:
    """A version 1 or 2 speed section in version 3's terms: each check named by its code
    with what it saw as a ``speed.note`` finding, and the machine's pace and load checks,
    thread placements and busy-core findings in ``steadiness``."""
    checks: list[Json] = []
    for check in _items(speed.get("compliance")):
        name = str(check.get("name"))
        check["name"] = _CHECK_CODES.get(name, name)
        if "detail" in check:
            check["finding"] = _said("speed.note", "context", str(check.pop("detail")))
        checks.append(check)
    runs: list[Json] = [c for c in checks if isinstance(c, dict) and c["name"] in _COMPLIANCE_CODES]
    machine: list[Json] = [c for c in checks if c not in runs]
    own: list[Json] = []
    moved: list[Json] = []
    for finding in _items(speed.get("findings")):
        code = finding.get("code")
        figures = finding.get("figures")
        if code == "speed.unreliable" and isinstance(figures, dict):
            finding["figures"] = {**figures, "failed": _coded(figures.get("failed"))}
        (moved if code in _STEADINESS else own).append(finding)
    placements = speed.pop("placements", None)
    out: dict[str, Json] = {
        **speed,
        "compliance": runs,
        "findings": own,
        "unreliable_because": _coded(speed.get("unreliable_because")),
    }
    if machine or placements is not None or moved:
        steadiness: dict[str, Json] = {"checks": machine, "findings": moved}
        if placements is not None:
            steadiness["placements"] = placements
        out["steadiness"] = steadiness
    return out


def _said(code: str, severity: str, text: str) -> Json:
    """A sentence of a version 1 verdict as a finding that says it as it was."""
    return {"code": code, "severity": severity, "figures": {"text": text}}
