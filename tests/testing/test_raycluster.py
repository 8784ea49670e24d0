"""The test cluster's reading of ``ray status``: a node counts once it is listed and its
resource is there exactly once (a killed node lingers in the listing for seconds)."""

from __future__ import annotations

import pytest

from parity.testing import raycluster
from parity.testing.raycluster import active, totals

STATUS = """======== Autoscaler status: 2026-12-02 04:33:10.451303 ========
Node status
---------------------------------------------------------------
Active:
 1 node_01ba
 1 node_6100
 1 node_77aa
Pending:
 (no pending nodes)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/2.0 CPU
 0B/45.89GiB memory
 0B/160.00MiB object_store_memory
 0.0/1.0 side-a
 1.0/2.0 side-b

From request_resources:
 (none)
"""


def test_totals_are_read_per_resource() -> None:
    have = totals(STATUS)
    assert have["side-a"] == 1.0 and have["side-b"] == 2.0 and have["CPU"] == 2.0
    assert "request_resources" not in " ".join(have)


def test_no_usage_section_is_no_resources() -> None:
    assert totals("Active:\n (no nodes)\n") == {}


def test_active_nodes_are_read_by_id() -> None:
    assert active(STATUS) == {"node_01ba", "node_6100", "node_77aa"}
    assert active("Pending:\n node_99\n") == set()


def test_a_cluster_that_never_forms_says_what_ray_status_last_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(raycluster, "_status", lambda gcs: "(ray status printed nothing in 30 s)")
    monkeypatch.setattr(raycluster.time, "sleep", lambda s: None)
    with pytest.raises(RuntimeError) as gave_up:
        raycluster._ready("127.0.0.2:1", ["side-a"], set(), timeout=0.05)
    said = str(gave_up.value)
    assert "side-a" in said and "ray status last said: (ray status printed nothing" in said
