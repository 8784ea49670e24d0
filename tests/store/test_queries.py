"""Reading the history: runs listed newest first and filtered, one run shown by an id
prefix, a metric over time per side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.errors import UsageError
from parity.model.codec import encode
from parity.store import Store


def test_ls_filters_and_orders_newest_first(store_file: Path) -> None:
    with Store.open(store_file) as s:
        rows = s.runs()
        assert [r.type for r in rows] == ["run", "compare", "compare", "compare"]
        assert [r.workload for r in rows[1:]] == ["gpt-generate", "gpt-train", "gpt-train"]
        assert [r.sides for r in s.runs(workload="gpt-generate")] == ["cpu -> cpu+threads=1"]
        assert {r.type for r in s.runs(device="cpu")} == {"run", "compare"}
        assert len(s.runs(device="cpu+bf16")) == 3
        assert len(s.runs(device="test cpu")) == 4  # device name, case-insensitive
        assert s.runs(device="cuda") == []
        assert len(s.runs(limit=2)) == 2


def test_show_by_prefix_with_bundles_and_verdict(store_file: Path, runs: Path) -> None:
    with Store.open(store_file) as s:
        newest_compare = s.runs(workload="gpt-train")[0]
        record = s.show(newest_compare.id[:6])
        assert record.type == "compare" and record.path == str((runs / "b").resolve())
        assert record.verdict is not None
        assert encode(record.verdict) == json.loads((runs / "b" / "verdict.json").read_text())
        assert [(b.role, b.run) for b in record.bundles] == [
            ("baseline", "r00"),
            ("baseline", "r01"),
            ("target", "r00"),
            ("target", "r01"),
        ]
        assert record.bundles[0].metrics["median_step_s"] > 0
        single = s.show(s.runs()[0].id)
        assert single.type == "run" and single.metrics["tokens_per_s"] > 0
        with pytest.raises(UsageError, match="no run 'zzz'"):
            s.show("zzz")
        with pytest.raises(UsageError, match="ambiguous"):
            s.show("b")


def test_trend_per_side_over_time(store_file: Path) -> None:
    with Store.open(store_file) as s:
        points = s.trend("median_step_s", workload="gpt-train")
        assert [(p.role, p.n) for p in points] == [
            ("baseline", 2),
            ("target", 2),
            ("baseline", 2),
            ("target", 2),
        ]
        times = [p.time_unix for p in points]
        assert times == sorted(times)
        base = [p.value for p in points if p.role == "baseline"]
        targ = [p.value for p in points if p.role == "target"]
        assert targ[0] < base[0] and targ[1] < targ[0]  # scale 0.9, then 0.8
        assert [p.side for p in s.trend("tokens_per_s", side="cpu+bf16")] == ["cpu+bf16"] * 3
        ttft = s.trend("ttft_p50_s")
        assert [p.workload for p in ttft] == ["gpt-generate", "gpt-generate"]
        ratios = s.trend("speed_ratio", workload="gpt-train")
        assert len(ratios) == 2 and ratios[1].value < ratios[0].value < 1
        speedup = s.trend("speedup", workload="gpt-train")
        assert speedup[0].value == pytest.approx(1 / ratios[0].value)
        with pytest.raises(UsageError, match=r"unknown metric 'speed'.*median_step_s"):
            s.trend("speed")
