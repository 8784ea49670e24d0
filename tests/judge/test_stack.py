"""The software stacks of two sides: each differing package named (torch and the backend
packages first), drift from pinned versions, and bundles that predate package lists."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from parity.errors import OptionError
from parity.judge.stack import check_pins, order, package_differences
from parity.judge.verdict import judge
from parity.model.bundle import SideRuns
from parity.model.manifest import Environment, PipFreeze
from parity.model.stack import Package, PackageOrigin
from parity.model.verdict import JudgeInputs
from tests.fixtures import bundles

BASE = {
    "torch": "2.13.0",
    "numpy": "2.1.0",
    "six": "1.16.0",
    "nvidia-cudnn-cu12": "9.1.0",
    "triton": "3.5.0",
    "zipp": "3.20.0",
    "aiohttp": "3.10.0",
}


def freeze(versions: dict[str, str], **origins: PackageOrigin) -> PipFreeze:
    listed = tuple(
        Package(name=n, version=v, origin=origins.get(n.replace("-", "_")))
        for n, v in sorted(versions.items())
    )
    digest = hashlib.sha256(repr(listed).encode()).hexdigest()
    return PipFreeze(sha256=digest, packages=len(listed), installed=listed)


def env(stack: PipFreeze | None = None, torch_version: str = "2.13.0") -> Environment:
    e = bundles.environment(torch_version=torch_version)
    return e if stack is None else replace(e, pip_freeze=stack)


def test_each_differing_package_is_named_torch_and_backends_first() -> None:
    target = {**BASE, "torch": "2.14.0", "six": "1.17.0", "triton": "3.6.0", "zzz": "1.0"}
    del target["aiohttp"]
    editable = PackageOrigin(kind="editable", url="file:///src/numpy")
    rows = package_differences(freeze(BASE), freeze(target, numpy=editable))
    assert rows is not None
    assert [(d.name, d.change) for d in rows] == [
        ("torch", "version"),
        ("triton", "version"),
        ("aiohttp", "removed"),
        ("numpy", "origin"),
        ("six", "version"),
        ("zzz", "added"),
    ]
    assert [d.backend for d in rows] == [True, True, False, False, False, False]
    assert rows[3].target is not None and rows[3].target.label == (
        "2.1.0 (editable file:///src/numpy)"
    )
    assert order("nvidia-nccl-cu12") < order("aiohttp") and order("torch") < order("nvidia-x")


def test_an_old_bundle_has_no_package_rows_and_a_cut_list_compares_up_to_its_end() -> None:
    old = PipFreeze(sha256="f" * 64, packages=7)
    assert package_differences(old, freeze(BASE)) is None
    cut = replace(freeze({"aiohttp": "3.10.0", "numpy": "2.1.0"}), truncated=True)
    rows = package_differences(cut, freeze({**BASE, "aiohttp": "4.0"}))
    assert rows is not None and [d.name for d in rows] == ["aiohttp"]  # nothing past numpy


def test_pins_report_drift_missing_and_unknown() -> None:
    pins = {"torch": "==2.13.*", "six": ">=1.17", "numpy": "~=2.1", "absent": "==1.0"}
    baseline = env(freeze(BASE))
    target = env(freeze({**BASE, "torch": "2.14.0", "six": "1.17.0"}))
    got = check_pins(pins, baseline, target)
    assert got is not None
    table = {c.package: (c.baseline_status, c.target_status) for c in got.checks}
    assert table == {
        "torch": ("ok", "drift"),
        "six": ("drift", "ok"),
        "numpy": ("ok", "ok"),
        "absent": ("missing", "missing"),
    }
    assert got.checks[0].package == "torch"
    assert got.drifted == ("torch", "absent", "six")
    # a bundle that predates package lists still names torch and its backend packages
    old = check_pins(pins, env(torch_version="2.14.0"), baseline)
    assert old is not None
    table = {c.package: (c.baseline_status, c.target_status) for c in old.checks}
    assert table["torch"] == ("drift", "ok") and table["six"] == ("unknown", "drift")
    assert check_pins({}, baseline, target) is None
    with pytest.raises(OptionError, match="pin torch"):
        check_pins({"torch": "==two"}, baseline, target)


def side(path: Path, stack: PipFreeze) -> SideRuns:
    man = bundles.manifest(role="x", spec="cpu")
    assert man.environment is not None
    man = replace(man, environment=replace(man.environment, pip_freeze=stack))
    samples = [0.1] + [0.01 * (1 + 0.01 * (i % 3)) for i in range(30)]
    made = bundles.make_bundle(path, man, run_metrics=bundles.metrics(samples), losses=[2.0, 1.0])
    return SideRuns.of(made)


def test_the_verdict_names_the_package_and_both_versions(tmp_path: Path) -> None:
    a = side(tmp_path / "a", freeze(BASE))
    b = side(tmp_path / "b", freeze({**BASE, "six": "1.17.0"}))
    v = judge(a, b, inputs=JudgeInputs(pins={"six": "==1.16.0"}))
    assert v.passed  # drift is reported, not gated
    assert [(d.field, d.baseline, d.target) for d in v.environment_differences] == [
        ("package six", "1.16.0", "1.17.0")
    ]
    assert v.pins is not None and v.pins.drifted == ("six",)
    # without lists on one side, the digest says the stacks differ, as before
    old = side(tmp_path / "old", PipFreeze(sha256="e" * 64, packages=7))
    assert [d.field for d in judge(old, b).environment_differences] == ["pip freeze"]


def test_diff_pins_on_the_command_line_and_stored_pins(tmp_path: Path) -> None:
    from parity.api import diff
    from parity.bundle import write_json
    from parity.model.codec import encode
    from tests.fixtures.cli import invoke

    a = bundles.save_side(side(tmp_path / "cmp" / "baseline", freeze(BASE)))
    b = bundles.save_side(side(tmp_path / "cmp" / "target", freeze({**BASE, "six": "1.17.0"})))
    result = invoke("diff", str(a), str(b), "--pin", "six==1.16.*", "--json")
    assert result.exit_code == 0, result.stderr  # drift is not a failed gate
    assert json.loads(result.stdout)["pins"]["drifted"] == ["six"]
    bad = invoke("diff", str(a), str(b), "--pin", "six==one")
    assert bad.exit_code == 2 and "pin six: 'one' is not a PEP 440 version" in bad.stderr
    # the pins a compare stored beside its sides, merged with those given
    write_json(tmp_path / "cmp" / "inputs.json", encode(JudgeInputs(pins={"torch": "==2.14"})))
    stored = diff(a, b)
    assert stored.pins is not None and stored.pins.drifted == ("torch",)
    both = diff(a, b, pins={"six": "==1.17.0"})
    assert both.pins is not None and [c.package for c in both.pins.checks] == ["torch", "six"]
