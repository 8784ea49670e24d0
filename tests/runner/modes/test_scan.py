"""``scan`` mode (``parity scan``): the op census instead of timed steps."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from parity.model.job import ScanPlan
from tests.conftest import FIXTURES
from tests.fixtures.jobs import run, workload_job

pytestmark = pytest.mark.slow
HAVE_FAKE = shutil.which(os.environ.get("CXX", "c++")) is not None and bool(shutil.which("ninja"))
PLANTED = f"{FIXTURES / 'scan_workloads.py'}:Planted"


def test_a_scan_bundle_holds_the_census(tmp_path: Path) -> None:
    bundle = run(workload_job(PLANTED, plan=ScanPlan()), tmp_path)
    assert bundle.ok, bundle.manifest.reason
    assert bundle.metrics is None and bundle.outputs is None
    ops = bundle.ops
    assert ops is not None and ops.steps_scanned == 2 and ops.scan_error is None
    assert [c.op for c in ops.custom_ops] == ["parity_test::scale"]
    assert ops.versions is not None and ops.versions.torch is not None
    assert ops.fallbacks is not None and ops.fallbacks.backend.backend is None


@pytest.mark.skipif(not HAVE_FAKE, reason="the parityfake device needs c++ and ninja")
def test_every_unsupported_op_on_the_device_is_listed(tmp_path: Path) -> None:
    env = {"PARITY_PLUGINS": "parity.testing.fakedevice", "PARITY_FAKE_UNSUPPORTED": "aten::gelu"}
    bundle = run(workload_job("mlp-train", "parityfake", ScanPlan()), tmp_path, env=env)
    assert bundle.ok, bundle.manifest.reason
    ops = bundle.ops
    assert ops is not None and {u.op for u in ops.unsupported} >= {"aten::gelu"}
    assert ops.plain_run is not None and ops.plain_run.failed  # the device really fails
    assert not ops.clean
