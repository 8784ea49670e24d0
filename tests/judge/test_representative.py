"""The measured shape against a declared production shape (typed objects only)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from parity.judge.representative import FROZEN, judge_representative
from parity.model.fair import ProductionShape
from parity.report import words
from tests.fixtures.bundles import workload_ref

DESCRIPTION = replace(
    workload_ref(batch_size=8, seq_len=64).description, parameters=4_000_000, optimizer="adamw"
)
PRODUCTION = ProductionShape(
    parameters=1_300_000_000, seq_len=2048, batch_size=256, precision="bf16", optimizer="adamw"
)


def test_fractions_of_production_are_said_and_it_is_not_representative() -> None:
    r = judge_representative(DESCRIPTION, ("fp32", "bf16"), FROZEN, PRODUCTION)
    rows = {x.name: x for x in r.rows}
    assert rows["parameters"].fraction is not None
    assert abs(rows["parameters"].fraction - 4e6 / 1.3e9) < 1e-12
    assert words.shape_row(rows["parameters"]) == "parameters 0.31% of production"
    assert words.shape_row(rows["batch_size"]) == "batch_size 1/32 of production"
    assert words.shape_row(rows["seq_len"]) == "seq_len 1/32 of production"
    assert rows["precision (target)"].within and rows["optimizer"].within
    assert r.representative is False
    assert words.shape(r).startswith("not representative: parameters 0.31% of production")


def test_within_the_factor_everywhere_is_representative() -> None:
    near = ProductionShape(parameters=8_000_000, seq_len=128, batch_size=16, precision="bf16")
    r = judge_representative(DESCRIPTION, ("bf16", "bf16"), FROZEN, near)
    assert r.representative is True
    assert {x.name: words.shape_row(x) for x in r.rows}[
        "parameters"
    ] == "parameters 1/2 of production"


def test_a_declared_pipeline_is_met_only_by_a_measured_loader() -> None:
    shape = ProductionShape(data_pipeline="webdataset shards")
    assert judge_representative(DESCRIPTION, ("fp32",) * 2, FROZEN, shape).representative is False
    fed = judge_representative(DESCRIPTION, ("fp32",) * 2, "the workload's loader", shape)
    assert fed.representative is True


def test_without_a_declared_shape_the_measured_shape_is_stated_unchecked() -> None:
    r = judge_representative(DESCRIPTION, ("fp32", "fp32"), FROZEN, None)
    assert not r.declared and r.representative is None
    assert "parameters 4,000,000" in words.shape(r) and "batch_size 8" in words.shape(r)
    assert words.shape(r).endswith("not checked: no production shape declared")


def test_the_unproven_item_gives_the_shape_as_evidence_only_where_it_was_checked() -> None:
    from parity.judge.rules import _unproven
    from parity.model.codec import decode
    from parity.model.verdict import Verdict

    golden = Path(__file__).parents[1] / "golden" / "verdict-passes.json"
    verdict = replace(decode(Verdict, json.loads(golden.read_text())), unproven=())

    near = ProductionShape(parameters=8_000_000, seq_len=128, batch_size=16, precision="bf16")
    cases = {
        "near": judge_representative(DESCRIPTION, ("bf16", "bf16"), FROZEN, near),
        "far": judge_representative(DESCRIPTION, ("fp32", "bf16"), FROZEN, PRODUCTION),
        "undeclared": judge_representative(DESCRIPTION, ("fp32", "fp32"), FROZEN, None),
    }
    items = {k: _unproven(verdict, r).unproven[-1] for k, r in cases.items()}
    assert items["near"].checked
    assert (
        words.unproven_evidence(items["near"])
        == "within 4x of production in every declared dimension"
    )
    assert not items["far"].checked
    assert words.unproven_how(items["far"]).startswith("not representative: parameters 0.31%")
    assert words.unproven_how(items["far"]).endswith("within 4x of it in every size")
    assert not items["undeclared"].checked and items["undeclared"].finding is None
    assert words.unproven_how(items["undeclared"]).startswith("declare the production shape")
