"""The command line: each command builds one request and calls the API with it; results
are rendered and mapped to exit codes; ``--help`` reads well; the README's tour parses.

The API is stubbed (``tests.fixtures.cli``): these tests run no worker. End-to-end runs
are in ``tests/test_cli_e2e.py`` (slow).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from parity.api import ComparisonResult, RunResult
from parity.comparison import Comparison
from parity.errors import SideError
from parity.judge.verdict import judge
from parity.model.codec import encode
from parity.model.reports import ScalingPoint, ScalingReport
from parity.model.verdict import Gate, JudgeInputs
from parity.request import CheckRequest, CompareRequest, RunRequest, ScaleRequest
from tests.conftest import run_cli
from tests.fixtures.cli import Calls, invoke, stub_api
from tests.judge.synthetic import side_runs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Calls:
    monkeypatch.chdir(tmp_path)
    return stub_api(monkeypatch)


def requested(calls: Calls, name: str, *args: str) -> Any:
    result = invoke(*args)
    assert result.exit_code == 1 and "stub" in result.stderr, result.stderr
    return calls.last(name)


# -- one request per command -----------------------------------------------------------------


def test_compare_builds_one_request_from_every_option(calls: Calls) -> None:
    request = requested(
        calls,
        "compare",
        *("compare", "mlp-train", "--baseline", "cpu", "--target", "cpu+bf16"),
        *("--size", "small", "--steps", "6", "--seed", "3", "--repeats", "2", "--no-compliance"),
        *("--precision", "0.05", "--budget", "10", "--timeout", "60", "--nproc", "2"),
        *("--nnodes", "1", "--price", "target=21.5:16", "--price", "baseline=3"),
        *("--allow-diff", 'steps="shorter"', "--target-loss", "4.5", "--checks", "a,b"),
        *("--out", "o", "--hf-config", "n_layer=2"),
    )
    assert isinstance(request, CompareRequest) and request.workload is not None
    w, m, j = request.workload, request.measure, request.judge
    assert (w.name, w.size, w.steps, w.seed, w.overrides) == (
        "mlp-train",
        "small",
        6,
        3,
        (("n_layer", "2"),),
    )
    assert str(request.baseline) == "cpu+nproc=2" and str(request.target) == "cpu+bf16+nproc=2"
    assert (m.repeats, m.compliance, m.precision, m.budget_s, m.timeout_s) == (
        2,
        False,
        0.05,
        10,
        60,
    )
    assert (
        j.cost.prices["target"].accelerators == 16 and j.cost.prices["baseline"].usd_per_hour == 3
    )
    assert j.allow == {"steps": "shorter"} and j.target_loss == 4.5
    assert request.checks == ("a", "b") and request.out == "o"


def test_defaults_come_from_the_request(calls: Calls) -> None:
    request = requested(calls, "compare", "compare")
    assert request.workload.name == "gpt-train" and request.workload.size == "tiny"
    assert str(request.baseline) == "cpu" and str(request.target) == "cpu+bf16"
    assert request.measure == dataclasses.replace(request.measure, repeats=None, precision=0.02)


def test_batch_sizes_ask_for_a_curve(calls: Calls) -> None:
    request = requested(calls, "curve_out", "compare", "cnn-infer", "--batch-sizes", "8,1")
    assert request.batch_sizes == (1, 8)


def test_script_mode_passes_the_command_after_the_separator(calls: Calls, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    args = ("compare", "--target", "cpu+bf16", "--", "python", "train.py", "--device", "{device}")
    request = requested(calls, "compare", *args)
    assert request.workload is None
    assert request.script == ("python", "train.py", "--device", "{device}")


def test_a_plan_with_options_beside_it(calls: Calls, tmp_path: Path) -> None:
    from parity.request.plan import TEMPLATE

    (tmp_path / "p.toml").write_text(TEMPLATE)
    request = requested(calls, "compare", "compare", "--plan", "p.toml", "--steps", "4")
    assert request.workload.name == "gpt-train" and request.workload.steps == 4


def test_resume_reads_the_stored_request(calls: Calls, tmp_path: Path) -> None:
    CompareRequest.from_kwargs(workload="mlp-train", target="cpu+bf16").save(tmp_path)
    assert requested(calls, "resume", "compare", "--resume", str(tmp_path)) == tmp_path
    # the same options again are fine; other ones are refused
    same = ("compare", "mlp-train", "--target", "cpu+bf16", "--resume", str(tmp_path))
    assert requested(calls, "resume", *same) == tmp_path
    other = invoke("compare", "mlp-train", "--steps", "3", "--resume", str(tmp_path))
    assert other.exit_code == 2 and "drop the other options" in other.stderr


def test_run_and_scan_build_a_run_request(calls: Calls) -> None:
    run = requested(calls, "run", "run", "mlp-train", "--device", "cpu", "--nproc", "2")
    assert isinstance(run, RunRequest) and run.mode == "run" and run.side.nproc == 2
    scan = requested(calls, "run", "scan", "cnn-infer", "--device", "cpu", "--out", "s")
    assert scan.mode == "scan" and scan.out == "s"


def test_checks_build_a_check_request(calls: Calls) -> None:
    rb = requested(
        calls, "run_check", "check", "rollback", "mlp-train", "--target", "cpu+bf16", "--k", "4"
    )
    assert isinstance(rb, CheckRequest) and (rb.check, rb.k, str(rb.baseline)) == (
        "rollback",
        4,
        "cpu",
    )
    soak = requested(
        calls,
        "run_check",
        *("check", "soak", "cnn-infer", "--device", "cpu", "--duration", "1m30s"),
        *("--max-drift", "0.2", "--warmup", "0.2"),
    )
    assert (soak.duration_s, soak.max_drift, soak.warmup) == (90.0, 0.2, 0.2)


def test_scale_builds_a_scale_request(calls: Calls) -> None:
    request = requested(
        calls, "measure_counts", "scale", "mlp-train", "--device", "cpu", "--scaling", "4,1,2"
    )
    assert isinstance(request, ScaleRequest) and request.counts == (1, 2, 4)


def test_diff_passes_the_options_given(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import parity.api
    from parity.request.options import Given

    seen: list[Given | None] = []

    def diff(a: Path, b: Path, *, given: Given | None, **kw: Any) -> Any:
        seen.append(given)
        raise SideError("stub")

    monkeypatch.setattr(parity.api, "diff", diff)
    assert invoke("diff", "a", "b").exit_code == 1
    assert invoke("diff", "a", "b", "--target-loss", "0", "--price", "target=2").exit_code == 1
    stored = JudgeInputs(target_loss=1.0, pins={"six": "==1"})
    assert seen[0] is not None and seen[0].placed(stored, "judge") == stored
    assert seen[1] is not None
    over = seen[1].placed(stored, "judge")
    assert over.target_loss == 0.0 and over.pins == stored.pins
    assert over.cost.prices["target"].usd_per_hour == 2


# -- rendering and exit codes ---------------------------------------------------------------


@pytest.fixture
def result(tmp_path: Path) -> ComparisonResult:
    a = side_runs(tmp_path, "baseline", side="cpu", step_s=0.010)
    b = side_runs(tmp_path, "target", side="cpu+bf16", step_s=0.008, seed=1)
    return ComparisonResult(Comparison(out=tmp_path, baseline=a, target=b, verdict=judge(a, b)))


def answer(monkeypatch: pytest.MonkeyPatch, name: str, value: object) -> None:
    import parity.api

    stub_api(monkeypatch)
    monkeypatch.setattr(parity.api, name, lambda *a, **k: value)


def test_a_passing_verdict_exits_0(
    monkeypatch: pytest.MonkeyPatch, result: ComparisonResult
) -> None:
    answer(monkeypatch, "compare", result)
    shown = invoke("compare", "mlp-train", "--target", "cpu+bf16")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.startswith("PASS: the target passes every gate")
    assert f"bundles and verdict.json in {result.out}" in " ".join(shown.stdout.split())
    as_json = invoke("compare", "mlp-train", "--target", "cpu+bf16", "--json")
    assert json.loads(as_json.stdout) == encode(result.verdict)
    assert "bundles and verdict.json" in as_json.stderr  # stdout stays JSON


def test_a_failing_gate_exits_1(monkeypatch: pytest.MonkeyPatch, result: ComparisonResult) -> None:
    failed = dataclasses.replace(
        result.verdict, gates=(Gate(name="quality", passed=False, detail="planted"),)
    )
    planted = dataclasses.replace(result.comparison, verdict=failed)
    answer(monkeypatch, "compare", ComparisonResult(planted))
    shown = invoke("compare", "mlp-train", "--target", "cpu")
    assert shown.exit_code == 1 and shown.stdout.startswith("FAIL: quality fails")
    assert "planted" in shown.stdout


def test_run_shows_the_bundle_or_the_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bundle = side_runs(tmp_path, "b", side="cpu", step_s=0.01, repeats=1).repeats[0]
    answer(monkeypatch, "run", RunResult(bundle))
    shown = invoke("run", "mlp-train", "--device", "cpu")
    assert shown.exit_code == 0 and "median steady step" in shown.stdout
    broken = dataclasses.replace(
        bundle, manifest=dataclasses.replace(bundle.manifest, status="failed", reason="boom")
    )
    answer(monkeypatch, "run", RunResult(broken))
    shown = invoke("run", "mlp-train", "--device", "cpu")
    assert shown.exit_code == 1 and shown.stderr.strip() == "parity: cpu failed: boom"


def test_scale_prints_a_table_and_exits_by_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    import parity.api

    stub_api(monkeypatch)
    point = ScalingPoint(nproc=2, status="ok", reason=None, wall_s=1.0, median_step_s=0.01)
    report = ScalingReport(
        side="cpu", workload="mlp-train", points=(point,), definition="strong", passed=False
    )
    monkeypatch.setattr(parity.api, "scale", lambda *a, **k: report)
    shown = invoke("scale", "mlp-train", "--device", "cpu")
    assert shown.exit_code == 1 and "scaling mlp-train on cpu" in shown.stdout
    shown = invoke("scale", "mlp-train", "--device", "cpu", "--json")
    assert json.loads(shown.stdout)["points"][0]["nproc"] == 2


def test_interrupted_and_internal_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import parity.api

    stub_api(monkeypatch)

    def interrupted(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    def broken(*a: object, **k: object) -> None:
        raise RuntimeError("a\nbug")

    monkeypatch.setattr(parity.api, "compare", interrupted)
    shown = invoke("compare", "mlp-train", "--target", "cpu")
    assert shown.exit_code == 130 and shown.stderr.strip() == "parity: interrupted"
    monkeypatch.setattr(parity.api, "compare", broken)
    shown = invoke("compare", "mlp-train", "--target", "cpu")
    lines = shown.stderr.strip().splitlines()
    assert shown.exit_code == 1 and len(lines) == 1
    assert lines[0].startswith("parity: internal error: RuntimeError: a\\nbug")


def test_wide_tables_are_not_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    import parity.workloads
    from parity.workloads.mlp import MlpTrain

    long = type("Long", (MlpTrain,), {"description": "a description " * 12})
    monkeypatch.setattr(parity.workloads, "registered", lambda: {"long-one": long})
    narrow = invoke("workloads", env={"COLUMNS": "80"})
    wide = invoke("workloads", "--wide", env={"COLUMNS": "80"})
    assert narrow.exit_code == wide.exit_code == 0
    assert max(map(len, narrow.stdout.splitlines())) <= 80
    assert max(map(len, wide.stdout.splitlines())) > 150


def test_the_workloads_table_keeps_its_columns_at_80() -> None:
    shown = invoke("workloads", env={"COLUMNS": "80"})
    lines = shown.stdout.splitlines()
    assert shown.exit_code == 0 and max(map(len, lines)) <= 80
    header = next(line for line in lines if "name" in line and "description" in line)
    columns = ["name", "kind", "size", "params", "batch", "seq", "steps", "description"]
    assert header.split() == columns
    assert any(line.split()[:3] == ["gpt-train", "train", "small"] for line in lines)
    assert any(line.startswith("  params: parameter count") for line in lines)


# -- help, entry point, weight ---------------------------------------------------------------


def all_help() -> dict[str, str]:
    import typer

    from parity.cli.app import app

    pages: dict[str, str] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        pages[" ".join(path)] = invoke(*path, "--help", env={"COLUMNS": "100"}).stdout
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return pages


def test_help_reads_well() -> None:
    pages = all_help()
    assert {"compare", "run", "scan", "check soak", "scale", "ls"} <= set(pages)
    for name, text in pages.items():
        assert "<bool>" not in text, name
        options = [line for line in text.splitlines() if line.lstrip().startswith("--")]
        assert not [line for line in options if "<" in line.split("  ")[1]], (name, options)
        assert "Usage: parity" in text, name
    listing = pages[""] + pages["check"]
    assert not re.search(r"^  \w+ +.*\.\.\.$", listing, re.MULTILINE), listing  # none cut short
    price = " ".join(pages["compare"].split())
    assert "SIDE=DOLLARS_PER_HOUR[:ACCELERATORS], repeatable, e.g. target=21.50:16" in price
    assert "--no-compliance" in pages["compare"] and "--wide" in pages["ls"]


def test_help_fits_a_screen_and_rare_options_stay_in_the_reference() -> None:
    """Every command's --help fits a screen: 60 lines at 100 columns; the options hidden
    from it (``request.options.RARE``) are still listed in docs/cli.md."""
    import typer
    from typer.testing import CliRunner

    from parity.cli.app import app
    from parity.request.options import RARE, TABLE

    group = typer.main.get_command(app)
    pages = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        for path in (
            [[name, sub] for sub in command.commands] if hasattr(command, "commands") else [[name]]
        ):
            shown = CliRunner().invoke(app, [*path, "--help"], terminal_width=100)
            pages[" ".join(path)] = shown.stdout
    long = {name: n for name, text in pages.items() if (n := len(text.splitlines())) > 60}
    assert long == {}, long
    compare = pages["compare"]
    assert "--cluster" not in compare and "docs/cli.md" in " ".join(compare.split())
    reference = (ROOT / "docs" / "cli.md").read_text()
    assert all(f"`{TABLE[key].flag}`" in reference for key in RARE)


@pytest.mark.slow  # starts a process
def test_the_entry_point_and_python_m(tmp_path: Path) -> None:
    assert 'parity = "parity.cli:entry"' in (ROOT / "pyproject.toml").read_text()
    from parity.cli import main

    assert main(["--version"]) == 0
    done = subprocess.run(
        [sys.executable, "-m", "parity", "compare", "--target", "tpu9"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stderr.startswith("parity: error: unknown device")


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "--target", "bogus+bf16"],
        ["compare", "mlp-train", "--baseline=cpu+turbo"],
        ["run", "mlp-train", "--device", "tpu9"],
        ["check", "rollback", "mlp-train", "--target", "cpu++bf16"],
        ["check", "soak", "gpt-generate", "--device", "cuda:x"],
    ],
)
@pytest.mark.slow  # starts a process
def test_a_bad_side_spec_is_refused_before_numpy_torch_or_typer(args: list[str]) -> None:
    code = (
        "import sys\n"
        "from parity.cli import main\n"
        f"code = main({args!r})\n"
        "print(code, *(m in sys.modules for m in ('numpy', 'torch', 'typer', 'rich')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["2", "False", "False", "False", "False"], out.stderr
    assert out.stderr.startswith("parity: error: ") and out.stderr.count("\n") == 1


def test_the_early_refusal_leaves_help_and_other_commands_to_the_app() -> None:
    from parity.cli import early_refusal

    assert early_refusal(["compare", "--target", "bogus", "--help"]) is None
    assert early_refusal(["ls", "--device", "bogus"]) is None  # a filter, not a side
    assert early_refusal(["compare", "--target"]) is None  # the parser names it
    assert early_refusal(["run", "--device", "cpu", "--", "python", "--device", "x"]) is None
    line = early_refusal(["scale", "mlp-train", "--device=tpu"])
    assert line is not None and "unknown device 'tpu'" in line


@pytest.mark.slow  # starts a process
def test_importing_the_cli_imports_no_torch() -> None:
    code = "import sys, parity.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def tour() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## A tour of the CLI", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    lines = []
    for line in block.splitlines():
        command = line.split("  #", 1)[0].strip()
        for part in command.split("&&"):
            words = shlex.split(part)
            if words and words[0] == "parity":
                lines.append(words[1:])
    return lines


@pytest.mark.parametrize("args", tour(), ids=lambda a: " ".join(a)[:50])
def test_every_line_of_the_readme_tour_parses(
    args: list[str], calls: Calls, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each line reaches the (stubbed) API or does its job; none is a usage error, except
    ``show`` of an id that this empty index does not hold."""
    import parity.devices
    import parity.probes.environment

    monkeypatch.setattr(parity.probes.environment, "collect", lambda device: {"python": "3"})
    monkeypatch.setattr(parity.devices, "known_device_types", lambda: {"cpu"})
    monkeypatch.setattr(parity.devices, "get_device", lambda name: name)
    if "--plan" in args:  # the tour writes it with parity init first
        from parity.request.plan import write_template

        write_template(tmp_path / "parity.toml")
    if args[0] == "reindex":  # a directory that does not exist is refused (exit 2)
        for name in args[1:]:
            (tmp_path / name).mkdir()
    env = {"PARITY_STORE": str(tmp_path / "i.db")}
    shown = invoke(*args, env=env)
    if args[0] == "show":
        assert shown.exit_code == 2 and "no run 'c1a2b3'" in shown.stderr
    else:
        assert shown.exit_code in (0, 1), (args, shown.stderr)
        assert "internal error" not in shown.stderr


def own_model() -> list[list[str]]:
    """The commands of the README's "Compare your own model on two devices"."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Compare your own model on two devices", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in section.split("```sh")[1:]:
        for line in block.split("```", 1)[0].splitlines():
            words = shlex.split(line.split("  #", 1)[0])
            if words and words[0] == "parity":
                lines.append(words[1:])
    return lines


def test_the_readme_shows_a_checkpoint_on_two_machines() -> None:
    commands = [args[0] for args in own_model()]
    assert commands.count("run") == 2 and "diff" in commands and "compare" in commands


@pytest.mark.parametrize("args", own_model(), ids=lambda a: " ".join(a)[:50])
def test_every_own_model_command_of_the_readme_parses(
    args: list[str], calls: Calls, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Beside a checkpoint directory and a data file as the README names them, each line
    reaches the (stubbed) API: none is a usage error."""
    import parity.devices

    monkeypatch.setattr(parity.devices, "known_device_types", lambda: {"cpu"})
    monkeypatch.setattr(parity.devices, "get_device", lambda name: name)
    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}')
    (tmp_path / "corpus.jsonl").write_text('{"text": "a line of text"}\n')
    shown = invoke(*args, env={"PARITY_STORE": str(tmp_path / "i.db")})
    assert shown.exit_code in (0, 1), (args, shown.stderr)
    assert "internal error" not in shown.stderr


# -- --mlflow [URI] ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "uri"),
    [
        (("compare", "mlp-train", "--mlflow"), None),  # alone, last
        (("compare", "--mlflow", "mlp-train"), None),  # a workload is not a URI
        (("compare", "--mlflow", "--target", "cpu", "mlp-train"), None),
        (("compare", "mlp-train", "--mlflow", "http://127.0.0.1:5000"), "http://127.0.0.1:5000"),
        (("compare", "mlp-train", "--mlflow=sqlite:///m.db"), "sqlite:///m.db"),
        (("compare", "--mlflow", "file:./mlruns", "mlp-train"), "file:./mlruns"),
    ],
)
def test_mlflow_takes_an_optional_tracking_uri(
    calls: Calls, args: tuple[str, ...], uri: str | None
) -> None:
    request = requested(calls, "compare", *args)
    assert request.workload.name == "mlp-train"
    assert request.mlflow is not None and request.mlflow.tracking_uri == uri
    assert request.mlflow.experiment == "parity"
    named = requested(calls, "compare", *args, "--mlflow-experiment", "migration")
    assert named.mlflow.experiment == "migration"
    assert requested(calls, "compare", "compare", "mlp-train").mlflow is None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--mlflow", "https://me:token@host:5000"), "MLFLOW_TRACKING_PASSWORD"),
        (("--mlflow", "ftp://host/x"), "is not a tracking URI"),
        (("--mlflow-experiment", "x"), "needs --mlflow"),
        (("--mlflow", "--mlflow-experiment", ""), "1 to 500 characters"),
    ],
)
def test_bad_mlflow_options_are_one_line_exit_2(
    calls: Calls, args: tuple[str, ...], says: str
) -> None:
    result = invoke("compare", "mlp-train", *args)
    assert result.exit_code == 2, result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not calls.made


@pytest.mark.slow
def test_run_and_compare_take_store(tmp_path: Path) -> None:
    """``--store`` as the README documents it for compare and run: the index named there
    (over ``$PARITY_STORE``), a database URL's password masked where it is refused."""
    index = tmp_path / "team.sqlite"
    res = run_cli(
        "run", "mlp-train", "--device", "cpu", "--steps", "2", "--out", str(tmp_path / "r"),
        "--store", str(index), env={"PARITY_STORE": str(tmp_path / "other.sqlite")},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    listed = run_cli("ls", "--store", str(index), "--json")
    assert listed.returncode == 0 and "mlp-train" in listed.stdout, listed.stderr
    assert not (tmp_path / "other.sqlite").exists()
    bad = run_cli("compare", "mlp-train", "--store", "mysql://u:Pw4711/x@h/db")
    assert bad.returncode == 2 and "Pw4711" not in bad.stderr
    assert "SQLite or PostgreSQL" in bad.stderr
