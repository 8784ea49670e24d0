"""parity's own compare against a PrivateUse1 device: only the device string changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

PLUGIN = {"PARITY_PLUGINS": "parity.testing.fakedevice"}


@pytest.mark.slow
def test_compare_cpu_against_the_privateuse1_device(tmp_path: Path) -> None:
    cmp = run_cli(
        "compare",
        "gpt-train",
        "--baseline",
        "cpu",
        "--target",
        "parityfake",
        "--repeats",
        "1",
        "--no-compliance",
        "--out",
        str(tmp_path / "c"),
        "--json",
        env=PLUGIN,
    )
    assert cmp.returncode == 0, cmp.stderr
    v = json.loads(cmp.stdout)
    assert v["sides"]["target"]["device_name"] == "parity fake accelerator"
    assert v["config_differences"] == [
        {"setting": "device", "baseline": "cpu", "target": "parityfake"}
    ]
    # every op runs the CPU kernel: the numbers are the CPU's, bit for bit
    loss = next(c for c in v["quality"]["checks"] if c["kind"] == "loss")
    assert loss["max_rel"] == 0.0
    assert v["memory"]["target"]["steps"]["device"]["allocated"] > 0


@pytest.mark.slow
def test_an_unsupported_op_fails_the_target_with_its_name(tmp_path: Path) -> None:
    env = {**PLUGIN, "PARITY_FAKE_UNSUPPORTED": "aten::gelu"}
    cmp = run_cli(
        "compare",
        "mlp-train",
        "--target",
        "parityfake",
        "--repeats",
        "1",
        "--out",
        str(tmp_path / "c"),
        "--json",
        env=env,
    )
    assert cmp.returncode == 1
    reason = json.loads(cmp.stdout)["sides"]["target"]["reason"]
    assert "NotImplementedError" in reason and "aten::gelu is not supported" in reason


def test_the_device_is_unknown_without_the_plugin(tmp_path: Path) -> None:
    cmp = run_cli(
        "compare",
        "mlp-train",
        "--target",
        "parityfake",
        "--out",
        str(tmp_path / "c"),
        env={"PARITY_PLUGINS": ""},
    )
    assert cmp.returncode == 2
    assert "unknown device 'parityfake'" in cmp.stderr
