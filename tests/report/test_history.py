"""``parity ls``, ``show`` and ``trend`` from the store's records, fitted to the width."""

from __future__ import annotations

from typing import Any

import pytest

from parity.model.history import BundleRow, RunRecord, RunRow, TrendPoint
from parity.report.history import fmt_metric, render_record, render_runs, render_trend, sparkline
from tests.report.cases import printed

T0 = 1_700_000_000.0
ROWS = [
    RunRow(
        id="c1a2b3c4d5e6f",
        type="compare",
        time_unix=T0,
        workload="hf:bert-base-uncased",
        size="tiny",
        sides="cuda:0 -> neuron+bf16+compile=neuron",
        result="PASS",
        speed_ratio=0.7,
        speed_verdict="faster",
        path="/home/user/projects/migration/parity-runs/2024-06-01-bert-neuron-bf16",
    ),
    RunRow(
        id="b0a1b2c3d4e5f",
        type="run",
        time_unix=T0 - 60,
        workload="mlp-train",
        size="tiny",
        sides="cpu+bf16",
        result="failed",
        median_step_s=None,
        path="/tmp/single",
    ),
]
RECORD = RunRecord(
    id="c1a2b3c4d5e6f",
    type="compare",
    path="/home/user/projects/migration/parity-runs/2024-06-01-bert-neuron-bf16",
    workload="hf:bert-base-uncased",
    size="tiny",
    time_unix=T0,
    passed=True,
    exit_code=0,
    sides="cuda:0 -> neuron+bf16+compile=neuron",
    bundles=(
        BundleRow(
            id="b9f8e7d6c5b4a",
            role="baseline",
            run="r00",
            status="ok",
            side_spec="cuda:0",
            device_name=None,
            path="/home/user/projects/migration/parity-runs/2024-06-01/baseline/r00",
            metrics={"median_step_s": 0.01},
        ),
    ),
    metrics={"host_peak_rss": 3 << 28, "tokens_per_s": 51000.0, "mfu": 0.31},
)
POINTS = [
    TrendPoint(
        time_unix=T0 + i,
        id=f"c{i:012d}",
        workload="gpt-train",
        size="tiny",
        role="target",
        side="neuron+bf16",
        value=0.01 * (1 + i / 10),
        n=3,
    )
    for i in range(4)
]


def out(render: Any, *args: object, width: int, wide: bool = False) -> str:
    return printed(lambda c: render(*args, c, wide=wide), width)


@pytest.mark.parametrize("width", [60, 80, 100, 200])
def test_every_table_fits(width: int) -> None:
    for text in (
        out(render_runs, ROWS, width=width),
        out(render_record, RECORD, width=width),
        out(render_trend, "median_step_s", POINTS, width=width),
    ):
        assert max(len(line) for line in text.splitlines()) <= width
        assert "neuron+" in text or "neuron+bf16" in text


def test_ls_reads_at_100_columns() -> None:
    text = out(render_runs, ROWS, width=100)
    assert "ratio 0.700 (faster)" in text and "median step -" in text
    assert "c1a2b3c4d5e6f" in text and "parity show ID" in text  # the path: parity show
    assert "2024-06-01-bert-neuron-bf16" in out(render_runs, ROWS, width=140)


def test_ls_is_a_table_at_80_columns() -> None:
    """One row a run (not one line a field): the id, when, what, result and figure."""
    lines = out(render_runs, ROWS, width=80).splitlines()
    assert lines[1].split() == ["id", "when", "workload:", "sides", "result", "figure"]
    assert max(len(line) for line in lines) <= 80


def test_show_of_a_comparison_leads_with_its_verdict_screen() -> None:
    from dataclasses import replace

    from tests.report.cases import golden

    v = golden("passes")
    assert v.speed is not None
    text = " ".join(out(render_record, replace(RECORD, verdict=v), width=100).split())
    assert text.startswith("PASS: the target passes every gate; speed 1.43x faster")
    ci = v.speed.interval
    assert f"{v.speed.ratio:.3f} [{ci.low:.3f}, {ci.high:.3f}] (95%): faster" in text
    wide = out(render_runs, ROWS, width=80, wide=True)
    assert any(len(line) > 80 for line in wide.splitlines())


def test_show_and_trend() -> None:
    text = out(render_record, RECORD, width=100)
    assert "768.0 MiB" in text and "51,000.0/s" in text and "31.0%" in text and "10.00 ms" in text
    trend = out(render_trend, "median_step_s", POINTS, width=100)
    assert "gpt-train neuron+bf16: " + sparkline([p.value for p in POINTS]) in trend
    assert "last vs first +30.0%" in trend
    assert fmt_metric("achieved_flops", 2e9) == "2.0 GFLOP/s"
