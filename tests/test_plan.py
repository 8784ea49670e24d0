from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.errors import UsageError
from parity.judge.cost import parse_price
from parity.plan import TEMPLATE, load_plan, write_template
from tests.conftest import differences, run_cli


def test_init_template_is_a_valid_plan(tmp_path: Path) -> None:
    path = tmp_path / "parity.toml"
    write_template(path)
    plan = load_plan(path)
    assert plan.workload.name == "gpt-train" and plan.baseline == "cpu"
    assert plan.target == "cpu+bf16" and plan.measure["precision"] == 0.02
    with pytest.raises(UsageError, match="already exists"):
        write_template(path)


def _plan(tmp_path: Path, replace: tuple[str, str] | None = None, extra: str = "") -> Path:
    text = TEMPLATE if replace is None else TEMPLATE.replace(*replace)
    path = tmp_path / "p.toml"
    path.write_text(text + extra)
    return path


@pytest.mark.parametrize(
    ("edit", "extra", "message"),
    [
        (('size = "tiny"', 'size = "huge"'), "", "workload.size must be one of"),
        (("seed = 0", 'seed = "zero"'), "", "workload.seed must be int"),
        (('side = "cpu+bf16"', 'side = "tpu9"'), "", "target.side: unknown device"),
        (("idle_fraction = 0.0", "idle_fraction = 1.5"), "", "idle_fraction must be in"),
        (("compliance = true", "compliance = 1"), "", "measure.compliance must be bool"),
        (None, "\n[cost2]\n", "plan.cost2 is not a known key"),
        (("precision = 0.02", "precison = 0.02"), "", "measure.precison is not a known key"),
        (('name = "gpt-train"', "# no name"), "", "workload.name is required"),
        (("[workload]", "[workload\n"), "", "not valid TOML"),
        (("# price_per_hour = 21.50", "price_per_hour = -3"), "", "price must be positive"),
    ],
)
def test_plan_errors_name_the_key(
    tmp_path: Path, edit: tuple[str, str] | None, extra: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message) as info:
        load_plan(_plan(tmp_path, edit, extra))
    assert "\n" not in str(info.value).strip()


def test_missing_plan_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="parity init"):
        load_plan(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("target=21.50:16", True),
        ("baseline=4", True),
        ("gpu=3", False),
        ("target=x", False),
        ("target=0", False),
        ("target=3:0", False),
    ],
)
def test_price_option(text: str, ok: bool) -> None:
    if ok:
        side, price = parse_price(text)
        assert side in ("baseline", "target") and price.usd_per_hour > 0
    else:
        with pytest.raises(UsageError):
            parse_price(text)


@pytest.mark.slow
def test_compare_with_a_plan_prices_and_checklist(tmp_path: Path) -> None:
    text = (
        TEMPLATE.replace('name = "gpt-train"', 'name = "mlp-train"')
        .replace("# steps = 30", "steps = 8")
        .replace("# repeats = 3", "repeats = 1")
        .replace("compliance = true", "compliance = false")
        .replace("# price_per_hour = 32.77", "price_per_hour = 3.0")
        .replace("# price_per_hour = 21.50", "price_per_hour = 2.0")
        .replace('quotas = ""', 'quotas = "approved for 4 instances"')
    )
    plan = tmp_path / "parity.toml"
    plan.write_text(text)
    out = tmp_path / "out"
    cmp = run_cli("compare", "--plan", str(plan), "--out", str(out), "--json")
    assert cmp.returncode == 0, cmp.stderr
    v = json.loads(cmp.stdout)
    assert v["workload"]["name"] == "mlp-train" and v["cost"]["available"]
    assert v["cost"]["unit"] == "successful run"
    assert v["cost"]["baseline"]["usd_per_accelerator_hour"] == 3.0
    quotas = next(o for o in v["operational"] if o["item"] == "quotas")
    assert quotas == {"item": "quotas", "answer": "approved for 4 instances", "answered": True}
    assert [u["checked"] for u in v["unproven"]] == [False] * 5
    d = run_cli("diff", str(out / "baseline"), str(out / "target"), "--json")
    assert differences(json.loads(d.stdout), v) == []  # inputs.json carries the plan's inputs
