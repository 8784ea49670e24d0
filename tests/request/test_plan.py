"""Plan files: the template, every bad plan as one line naming the key (``PLAN_CASES``,
counted with the other bad inputs in ``tests/test_bad_input.py``), options given beside a
plan replacing its values, and a compare run from a plan (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.errors import PlanError, UsageError
from parity.request import CompareRequest
from parity.request.options import BASELINE, PINS, PRECISION, TARGET, WORKLOAD, Given
from parity.request.plan import TEMPLATE, load_plan, write_template
from parity.request.values import parse_price
from tests.conftest import differences, run_cli
from tests.fixtures.cli import invoke, snapshot, stub_api


def test_init_template_is_a_valid_plan(tmp_path: Path) -> None:
    path = tmp_path / "parity.toml"
    write_template(path)
    plan = load_plan(path)
    assert plan.get(WORKLOAD) == "gpt-train" and str(plan.get(BASELINE)) == "cpu"
    assert str(plan.get(TARGET)) == "cpu+bf16" and plan.get(PRECISION) == 0.02
    request = CompareRequest.from_plan(path)
    assert request.measure.precision == 0.02 and str(request.target) == "cpu+bf16"
    with pytest.raises(UsageError, match="already exists"):
        write_template(path)


def test_a_plan_s_stack_table_pins_versions_merged_with_given_pins(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        TEMPLATE.replace('# torch = "==2.13.*"', 'torch = "==2.13.*"').replace(
            '# numpy = "~=2.1"', 'NumPy = "2.1.0"'
        )
    )
    assert load_plan(path).get(PINS) == {"torch": "==2.13.*", "numpy": "==2.1.0"}
    request = CompareRequest.from_plan(path)
    assert request.judge.pins == {"torch": "==2.13.*", "numpy": "==2.1.0"}
    given = Given.read("compare", {"pins": ["torch>=2.13,<2.15", "six==1.17.0"]}, "kwargs")
    merged = CompareRequest.from_plan(path, given).judge.pins
    assert merged == {"torch": ">=2.13,<2.15", "numpy": "==2.1.0", "six": "==1.17.0"}


def test_options_given_beside_a_plan_replace_its_values(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(TEMPLATE.replace("# steps = 30", "steps = 30"))
    given = Given.read("compare", {"steps": 5, "target": "cpu+fp16"}, "kwargs")
    request = CompareRequest.from_plan(path, given)
    assert request.workload is not None and request.workload.steps == 5
    assert str(request.target) == "cpu+fp16" and str(request.baseline) == "cpu"


def test_a_plan_names_the_generation_loop(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        TEMPLATE.replace('name = "gpt-train" ', 'name = "hf:gpt2-generate" ').replace(
            '# generate_loop = "hf"', 'generate_loop = "hf"'
        )
    )
    request = CompareRequest.from_plan(path)
    assert request.workload is not None and request.workload.generate_loop == "hf"
    path.write_text(TEMPLATE.replace('# generate_loop = "hf"', 'generate_loop = "fast"'))
    with pytest.raises(PlanError, match="--generate-loop 'fast' is unknown"):
        CompareRequest.from_plan(path)


#: the template's commented-out [mlflow] table
MLFLOW_BLOCK = TEMPLATE[TEMPLATE.index("# [mlflow]") : TEMPLATE.index("\n\n[operational]")]
URI = "http://127.0.0.1:5000"


@pytest.mark.parametrize(
    ("table", "uri", "experiment"),
    [
        ("[mlflow]\n", None, "parity"),
        ('[mlflow]\ntracking_uri = ""\n', None, "parity"),
        (f'[mlflow]\ntracking_uri = "{URI}"\nexperiment = "m"\n', URI, "m"),
    ],
)
def test_a_plan_s_mlflow_table_logs_the_comparison(
    tmp_path: Path, table: str, uri: str | None, experiment: str
) -> None:
    path = tmp_path / "p.toml"
    path.write_text(edit(MLFLOW_BLOCK, table))
    request = CompareRequest.from_plan(path)
    assert request.mlflow is not None
    assert (request.mlflow.tracking_uri, request.mlflow.experiment) == (uri, experiment)
    path.write_text(TEMPLATE)
    assert CompareRequest.from_plan(path).mlflow is None


def edit(old: str, new: str) -> str:
    assert old in TEMPLATE, old
    return TEMPLATE.replace(old, new)


PLAN_CASES: list[tuple[str, str, list[str], str]] = [
    ("bad size", edit('size = "tiny"', 'size = "huge"'), [], "size 'huge' is unknown"),
    ("seed text", edit("seed = 0", 'seed = "zero"'), [], "workload.seed must be a whole number"),
    ("seed float", edit("seed = 0", "seed = 1.5"), [], "workload.seed must be a whole"),
    ("seed negative", edit("seed = 0", "seed = -1"), [], "workload.seed must be at least 0"),
    ("target device", edit('side = "cpu+bf16"', 'side = "tpu9"'), [], "unknown device 'tpu9'"),
    ("side not text", edit('side = "cpu+bf16"', "side = 3"), [], "target.side must be str"),
    ("idle fraction", edit("idle_fraction = 0.0", "idle_fraction = 1.5"), [], "idle_fraction"),
    (
        "compliance int",
        edit("compliance = true", "compliance = 1"),
        [],
        "measure.compliance must be True or False",
    ),
    ("unknown table", TEMPLATE + "\n[cost2]\n", [], "plan.cost2 is not a known key"),
    ("mlflow uri", TEMPLATE + '\n[mlflow]\ntracking_uri = "ftp://x"\n', [], "not a tracking URI"),
    ("mlflow key", TEMPLATE + "\n[mlflow]\nuri = 1\n", [], "mlflow.uri is not a known key"),
    (
        "typo key",
        edit("precision = 0.02", "precison = 0.02"),
        [],
        "measure.precison is not a known",
    ),
    ("no name", edit('name = "gpt-train"', "# no name"), [], "workload.name is required"),
    ("not toml", edit("[workload]", "[workload\n"), [], "not valid TOML"),
    ("negative price", edit("# price_per_hour = 21.50", "price_per_hour = -3"), [], "price"),
    ("inf price", edit("# price_per_hour = 21.50", "price_per_hour = inf"), [], "finite"),
    (
        "zero accelerators",
        edit("# price_per_hour = 21.50", "price_per_hour = 2.0").replace(
            "# accelerators = 16", "accelerators = 0"
        ),
        [],
        "accelerators",
    ),
    ("accelerators alone", edit("# accelerators = 16", "accelerators = 4"), [], "price_per_hour"),
    ("timeout nan", edit("timeout_s = 900", "timeout_s = nan"), [], "must be a finite number"),
    ("timeout inf", edit("timeout_s = 900", "timeout_s = inf"), [], "must be a finite number"),
    (
        "timeout zero",
        edit("timeout_s = 900", "timeout_s = 0"),
        [],
        "measure.timeout_s must be at least 1",
    ),
    (
        "budget zero",
        edit("budget_s = 30", "budget_s = 0"),
        [],
        "measure.budget_s must be more than 0",
    ),
    (
        "repeats zero",
        edit("# repeats = 3", "repeats = 0"),
        [],
        "measure.repeats must be at least 1",
    ),
    (
        "repeats many",
        edit("# repeats = 3", "repeats = 5000"),
        [],
        "measure.repeats must be at most",
    ),
    ("steps zero", edit("# steps = 30", "steps = 0"), [], "workload.steps must be at least 1"),
    ("batch negative", edit("# batch_size = 8", "batch_size = -1"), [], "workload.batch_size"),
    ("allow table twice", TEMPLATE + '\n[allow_diff]\ncolour = "x"\n', [], "not valid TOML"),
    ("allow field", edit('# seed = "the target', 'colour = "x" #'), [], "not a fingerprint field"),
    (
        "allow not text",
        edit('# seed = "the target', "seed = 5 #"),
        [],
        "allow_diff.seed must be str",
    ),
    ("operational key", TEMPLATE.replace('quotas = ""', 'quota = ""'), [], "operational.quota"),
    ("target loss nan", edit("# target_loss = 5.0", "target_loss = nan"), [], "finite"),
    (
        "target loss text",
        edit("# target_loss = 5.0", 'target_loss = "low"'),
        [],
        "must be a number",
    ),
    ("no baseline", TEMPLATE.replace("[baseline]", "[baseline_]"), [], "plan.baseline_ is not"),
    ("workload not a table", 'workload = "x"\n', [], "plan.workload must be dict"),
    ("run steps zero", edit("# run_steps = 100000", "run_steps = 0"), [], "cost.run_steps"),
    (
        "negative rate",
        edit("engineering_rate = 0", "engineering_rate = -1"),
        [],
        "engineering_rate",
    ),
    ("duplicate key", TEMPLATE + "\n[measure]\n", [], "not valid TOML"),
    ("nested too deeply", "a = " + "[" * 100_000, [], "nested too deeply"),
    ("binary", "\udcff", [], "cannot be read"),
    ("pin not text", edit('# torch = "==2.13.*"', "torch = 2.13"), [], "stack.torch must be str"),
    ("pin bad", edit('# torch = "==2.13.*"', 'torch = "==two"'), [], "pin torch: 'two' is not"),
    ("pin wildcard", edit('# numpy = "~=2.1"', 'numpy = ">=2.*"'), [], "wildcard goes only"),
    ("pin name", edit('# numpy = "~=2.1"', '"-numpy" = "==1"'), [], "is not a package name"),
    ("bad pin beside it", TEMPLATE, ["--pin", "torch"], "--pin 'torch' names no version"),
    ("option beside it", TEMPLATE, ["--steps", "0"], "--steps must be at least 1"),
    ("bad side beside it", TEMPLATE, ["--target", "tpu9"], "unknown device"),
]


def _write(path: Path, text: str) -> None:
    if "\udcff" in text:
        path.write_bytes(b"\xff\xfe\x00garbage")
    else:
        path.write_text(text)


@pytest.mark.parametrize(
    ("name", "text", "extra", "message"), PLAN_CASES, ids=[c[0] for c in PLAN_CASES]
)
def test_a_bad_plan_is_one_line_exit_2(
    name: str,
    text: str,
    extra: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub_api(monkeypatch)
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "p.toml", text)
    before = snapshot(tmp_path)
    result = invoke("compare", "--plan", "p.toml", *extra)
    assert result.exit_code == 2, (name, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], (name, result.stderr)
    if not extra:  # a value of the file itself: the line names the file
        assert "p.toml" in lines[0], (name, lines[0])
    assert snapshot(tmp_path) == before


def test_a_plan_that_is_a_directory_or_missing(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="parity init"):
        load_plan(tmp_path / "nope.toml")
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(tmp_path)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("target=21.50:16", True),
        ("baseline=4", True),
        ("gpu=3", False),
        ("target=x", False),
        ("target=0", False),
        ("target=3:0", False),
        ("target=nan", False),
        ("target=inf", False),
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
    # the five operational items, and whether the frozen workload is representative: a
    # plan with no production shape leaves that one open too
    items = {u["item"]: u["checked"] for u in v["unproven"]}
    assert len(items) == 6 and not any(items.values()), items
    d = run_cli("diff", str(out / "baseline"), str(out / "target"), "--json")
    assert differences(json.loads(d.stdout), v) == []  # inputs.json carries the plan's inputs


def test_a_plan_of_a_part_combines_with_a_workload_and_sides_given_beside_it(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "prod.toml"
    plan.write_text('[production]\nparameters = "1.3B"\nseq_len = 2048\n')
    given = Given.read(
        "compare", {"workload": "mlp-train", "baseline": "cpu", "target": "cpu+bf16"}, "cli"
    )
    request = CompareRequest.from_plan(plan, given)
    assert request.workload is not None and request.workload.name == "mlp-train"
    assert str(request.target) == "cpu+bf16"
    assert request.judge.production is not None
    # a table the plan has is still checked whole: [baseline] without its side
    plan.write_text('[baseline]\ninstance = "m7i.large"\n')
    with pytest.raises(PlanError, match=r"baseline\.side is required"):
        CompareRequest.from_plan(plan, given)
