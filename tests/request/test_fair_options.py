"""``--production`` and ``--slo``: parsed once, every bad value one clear error."""

from __future__ import annotations

import pytest

from parity.errors import OptionError
from parity.model.fair import LatencyLimit, ProductionShape
from parity.request import CompareRequest
from parity.request.fair_options import parse_production, parse_slo


def test_production_items_and_mappings() -> None:
    got = parse_production(["parameters=1.3B", "seq_len=2048", "batch_size=8", "precision=bf16"])
    assert got == ProductionShape(
        parameters=1_300_000_000, seq_len=2048, batch_size=8, precision="bf16"
    )
    plan = parse_production(
        {"parameters": 350_000_000, "optimizer": "AdamW", "max_new_tokens": "256"}
    )
    assert plan == ProductionShape(parameters=350_000_000, optimizer="adamw", max_new_tokens=256)
    assert parse_production(None) is None and parse_production([]) is None


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["params=1B"], "not a production key"),
        (["parameters=lots"], "must be a count"),
        (["parameters=0"], "at least 1"),
        (["optimizer=newton"], "use one of adamw"),
        (["precision=fp8"], "use one of fp32"),
        (["seq_len"], "must be KEY=VALUE"),
    ],
)
def test_bad_production_values(items: list[str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_production(items)


def test_slo_strings_repeats_and_mappings() -> None:
    got = parse_slo(["ttft_p99=200ms,tpot_p50=30ms", "e2e_p99=2s", "step_p90=500us"])
    assert got == (
        LatencyLimit(metric="ttft", percentile=99, limit_s=0.2),
        LatencyLimit(metric="tpot", percentile=50, limit_s=0.03),
        LatencyLimit(metric="e2e", percentile=99, limit_s=2.0),
        LatencyLimit(metric="latency", percentile=90, limit_s=0.0005),
    )
    assert parse_slo({"latency_p50": 0.1}) == (
        LatencyLimit(metric="latency", percentile=50, limit_s=0.1),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ttft_p95=1s", "not a limit"),
        ("speed_p99=1s", "not a limit"),
        ("ttft_p99=fast", "must be a time"),
        ("ttft_p99=0ms", "more than 0"),
        ("ttft_p99", "NAME=TIME"),
        ("ttft_p99=1s,ttft_p99=2s", "given twice"),
    ],
)
def test_bad_slo_values(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_slo(text)


def test_the_request_carries_them_into_the_judge_inputs() -> None:
    r = CompareRequest.from_kwargs(
        workload="mlp-train",
        baseline="cpu",
        target="cpu",
        production={"parameters": "1.3B"},
        slo="latency_p50=1s",
        tuning_intended="on purpose",
    )
    assert r.judge.production == ProductionShape(parameters=1_300_000_000)
    assert r.judge.slo == (LatencyLimit(metric="latency", percentile=50, limit_s=1.0),)
    assert r.judge.tuning_intended == "on purpose"


def test_a_plan_declares_the_production_shape_limits_and_an_intended_asymmetry(
    tmp_path: object,
) -> None:
    from pathlib import Path

    from parity.errors import PlanError

    assert isinstance(tmp_path, Path)
    plan = tmp_path / "parity.toml"
    body = """
[workload]
name = "gpt-generate"
[baseline]
side = "cpu+compile"
[target]
side = "cpu"
[production]
parameters = "1.3B"
seq_len = 2048
batch_size = 8
precision = "bf16"
optimizer = "adamw"
[slo]
ttft_p99 = "200ms"
e2e_p50 = 2
[tuning]
intended = "the baseline is our production configuration"
"""
    plan.write_text(body)
    r = CompareRequest.from_plan(plan)
    assert r.judge.production == ProductionShape(
        parameters=1_300_000_000, seq_len=2048, batch_size=8, precision="bf16", optimizer="adamw"
    )
    assert r.judge.slo == (
        LatencyLimit(metric="ttft", percentile=99, limit_s=0.2),
        LatencyLimit(metric="e2e", percentile=50, limit_s=2.0),
    )
    assert r.judge.tuning_intended == "the baseline is our production configuration"
    plan.write_text(body.replace("seq_len = 2048", "seq = 2048"))
    with pytest.raises(PlanError, match=r"production\.seq is not a known key"):
        CompareRequest.from_plan(plan)
    plan.write_text(body.replace('ttft_p99 = "200ms"', 'ttft_p99 = "soon"'))
    with pytest.raises(PlanError, match="must be a time"):
        CompareRequest.from_plan(plan)
