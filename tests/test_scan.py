"""``parity scan`` and the scan inside every compare, end to end on the parityfake device."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from tests.fixtures.scan_workloads import planted_line

if shutil.which(os.environ.get("CXX", "c++")) is None or shutil.which("ninja") is None:
    pytest.skip("the parityfake device needs a C++ compiler and ninja", allow_module_level=True)

PLUGIN = {"PARITY_PLUGINS": "parity.testing.fakedevice"}
PLANTED = f"{FIXTURES / 'scan_workloads.py'}:Planted"
FIXTURE_FILE = "scan_workloads.py"


@pytest.mark.slow
def test_one_scan_lists_every_unsupported_op_with_its_line(tmp_path: Path) -> None:
    unsupported = ["aten::gelu", "aten::gelu_backward", "aten::nll_loss_forward", "aten::addcdiv_"]
    env = {**PLUGIN, "PARITY_FAKE_UNSUPPORTED": ",".join(unsupported)}
    out = tmp_path / "scan"
    cmd = ("scan", PLANTED, "--device", "parityfake", "--out", str(out), "--json")
    res = run_cli(*cmd, "--strict", env=env)
    assert res.returncode == 1, res.stderr  # --strict: unsupported ops found
    assert "--strict: 4 unsupported op(s)" in res.stderr
    ops = json.loads(res.stdout)
    assert ops["status"] == "ok" and (out / "ops.json").is_file()
    found = {u["op"]: u for u in ops["unsupported"]}
    assert sorted(found) == sorted(unsupported)  # exactly those N, in one pass

    def lines(op: str) -> set[str]:
        return {s["where"].rsplit("/", 1)[-1] for s in found[op]["sources"]}

    body = f"{FIXTURE_FILE}:{planted_line('graph break') - 1}"  # h = self.body(x)
    assert lines("aten::gelu") == {body}
    assert lines("aten::gelu_backward") == {body}  # backward: the forward line of the node
    assert found["aten::gelu_backward"]["phases"] == ["backward"]
    assert lines("aten::nll_loss_forward") == {f"{FIXTURE_FILE}:{_loss_line()}"}
    assert found["aten::addcdiv_"]["phases"] == ["optimizer"]
    assert found["aten::addcdiv_"]["sources"][0]["code"] == "self.optimizer.step()"
    # then a plain step without the crutch: it fails, on the first of them
    plain = ops["plain_run"]
    assert plain["ran"] and plain["failed"] and plain["error"]["type"] == "NotImplementedError"
    # the planted host sync, custom op and graph break, each with its line
    (sync,) = ops["host_syncs"]
    assert sync["op"] == "aten::_local_scalar_dense"
    assert sync["where"].endswith(f"{FIXTURE_FILE}:{planted_line('host sync')}")
    assert sync["count"] == ops["steps_scanned"] == 2
    (custom,) = ops["custom_ops"]
    assert custom["op"] == "parity_test::scale" and custom["test_first"]
    assert custom["sources"][0]["where"].endswith(f":{planted_line('custom op')}")
    explain = ops["graphs"]["explain"]
    assert explain["graph_breaks"] == ops["summary"]["graph_breaks"] == 1
    (reason,) = explain["reasons"]
    assert "graph_break()" in reason["reason"]
    assert reason["where"].endswith(f"{FIXTURE_FILE}:{planted_line('graph break')}")
    assert ops["graphs"]["fullgraph"]["passed"] is False
    assert ops["graphs"]["backend"] == "eager"
    # the inventory: phases and counts per step
    phases = {row["phase"] for row in ops["inventory"]}
    assert phases == {"forward", "backward", "optimizer"}
    assert all(len(row["count_per_step"]) == 2 for row in ops["inventory"])
    assert ops["versions"]["torch"]


def _loss_line() -> int:
    text = (FIXTURES / FIXTURE_FILE).read_text().splitlines()
    return next(i for i, ln in enumerate(text, 1) if "return torch.nn.functional.cross" in ln)


@pytest.mark.slow
def test_a_clean_scan_passes_strict_and_prints_a_summary(tmp_path: Path) -> None:
    res = run_cli(
        "scan", "mlp-train", "--device", "parityfake", "--strict", "--steps", "3",
        "--out", str(tmp_path / "s"), env={**PLUGIN, "COLUMNS": "200"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "unsupported ops: none" in res.stdout
    assert "graph breaks: 0" in res.stdout
    assert "a plain step without the CPU crutch runs" in res.stdout
    ops = json.loads((tmp_path / "s" / "ops.json").read_text())
    assert ops["clean"] and not ops["host_syncs"] and not ops["fallbacks"]["device_mismatch"]


@pytest.mark.slow
def test_compare_bundles_and_verdict_carry_the_scan(tmp_path: Path) -> None:
    env = {**PLUGIN, "PARITY_FAKE_UNSUPPORTED": "aten::gelu,aten::addcdiv_"}
    out = tmp_path / "c"
    res = run_cli(
        "compare", PLANTED, "--baseline", "cpu", "--target", "parityfake", "--repeats", "1",
        "--no-compliance", "--no-report", "--out", str(out), "--json", env=env,
    )  # fmt: skip
    assert res.returncode == 1  # the target cannot run gelu
    v = json.loads(res.stdout)
    comp = v["compatibility"]
    # the baseline ran: its scan follows its timed steps
    base_ops = json.loads((out / "baseline" / "r00" / "ops.json").read_text())
    assert (
        base_ops["plain_run"]["note"] == "the timed steps" and not base_ops["plain_run"]["failed"]
    )
    assert comp["baseline"]["unsupported"] == [] and comp["baseline"]["graph_breaks"] == 1
    # the target failed on the first op; its bundle still lists both
    target = comp["target"]
    assert target["after_failure"]
    assert [u["op"] for u in target["unsupported"]] == ["aten::addcdiv_", "aten::gelu"]
    assert (out / "target" / "r00" / "ops.json").is_file()
    assert target["host_syncs"][0]["where"].endswith(f":{planted_line('host sync')}")
    assert {r["name"] for r in comp["versions"]} >= {"python", "torch"}


def test_scan_usage_errors_exit_2(tmp_path: Path) -> None:
    res = run_cli("scan", "mlp-train", "--device", "nosuch", "--out", str(tmp_path / "s"))
    assert res.returncode == 2
    assert "unknown device 'nosuch'" in res.stderr
    assert not (tmp_path / "s").exists()
