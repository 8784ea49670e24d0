"""The measured shape against a declared production shape (typed objects only)."""

from __future__ import annotations

from dataclasses import replace

from parity.judge.representative import FROZEN, judge_representative
from parity.model.fair import ProductionShape
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
    assert rows["parameters"].text == "parameters 0.31% of production"
    assert rows["batch_size"].text == "batch_size 1/32 of production"
    assert rows["seq_len"].text == "seq_len 1/32 of production"
    assert rows["precision (target)"].within and rows["optimizer"].within
    assert r.representative is False
    assert r.summary.startswith("not representative: parameters 0.31% of production")


def test_within_the_factor_everywhere_is_representative() -> None:
    near = ProductionShape(parameters=8_000_000, seq_len=128, batch_size=16, precision="bf16")
    r = judge_representative(DESCRIPTION, ("bf16", "bf16"), FROZEN, near)
    assert r.representative is True
    assert {x.name: x.text for x in r.rows}["parameters"] == "parameters 1/2 of production"


def test_a_declared_pipeline_is_met_only_by_a_measured_loader() -> None:
    shape = ProductionShape(data_pipeline="webdataset shards")
    assert judge_representative(DESCRIPTION, ("fp32",) * 2, FROZEN, shape).representative is False
    fed = judge_representative(DESCRIPTION, ("fp32",) * 2, "the workload's loader", shape)
    assert fed.representative is True


def test_without_a_declared_shape_the_measured_shape_is_stated_unchecked() -> None:
    r = judge_representative(DESCRIPTION, ("fp32", "fp32"), FROZEN, None)
    assert not r.declared and r.representative is None
    assert "parameters 4,000,000" in r.summary and "batch_size 8" in r.summary
    assert r.summary.endswith("not checked: no production shape declared")
