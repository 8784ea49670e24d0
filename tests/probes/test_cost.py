"""The pre-run estimate's cheap figures (``parity.probes.cost``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.probes import cost
from parity.spec import WorkloadSpec
from parity.workloads import resolve
from parity.workloads.frozen import freeze


def test_a_reduced_precision_side_s_step_is_timed_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path))
    workload = resolve(WorkloadSpec(name="mlp-train", steps=3))
    frozen = freeze(workload)
    found = cost.step_cost(workload, frozen, ("bf16",))
    assert set(found.precision_step_s) == {"bf16"} and found.precision_step_s["bf16"] > 0
    assert cost.step_cost(workload, frozen).precision_step_s == {}  # none asked
    # where the matmul's ratio puts the step over the limit, the ratio stands alone
    monkeypatch.setattr(cost, "PRECISION_STEP_UNDER_S", 0.0)
    assert cost.step_cost(workload, frozen, ("bf16",)).precision_step_s == {}
