"""The JSON Schemas come from the model and hold for what parity writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from parity.schemas import DOCUMENTS, SCHEMAS, all_schemas, document_file, schema
from tests.judge.synthetic import side_dir

GOLDEN = Path(__file__).parent / "golden"


def problems(name: str, document: object) -> list[str]:
    validator = Draft202012Validator(schema(name))
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


def test_every_schema_is_valid_json_schema() -> None:
    for name in SCHEMAS:
        Draft202012Validator.check_schema(schema(name))
    assert set(all_schemas()) == set(DOCUMENTS)


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("verdict-*.json")), ids=lambda p: p.stem)
def test_golden_verdicts_validate(path: Path) -> None:
    assert problems("verdict", json.loads(path.read_text())) == []


def test_bundle_documents_validate_and_unknown_keys_do_not(tmp_path: Path) -> None:
    side = side_dir(tmp_path, "baseline", side="cpu", step_s=0.01, repeats=1)
    files = {name: side / "r00" / document_file(name) for name in DOCUMENTS}
    seen = set()
    for name, path in files.items():
        if path.is_file():
            doc = json.loads(path.read_text())
            assert problems(name, doc) == [], path
            seen.add(name)
    assert {"manifest", "metrics", "numerics", "digest"} <= seen
    assert problems("side", json.loads((side / "side.json").read_text())) == []
    bad = json.loads(files["manifest"].read_text()) | {"surprise": 1}
    assert problems("manifest", bad)
