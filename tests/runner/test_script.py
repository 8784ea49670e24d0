"""Script mode: an unmodified training script per side, instrumented from outside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.bundle import load_bundle, load_side
from parity.errors import UsageError
from parity.runner.script import (
    UNVERIFIED,
    check_side,
    make_job,
    parse_command,
    split_argv,
)
from parity.spec import parse_side
from tests.conftest import FIXTURES, run_cli
from tests.runner.modes.test_script import FAILING

SCRIPT = FIXTURES / "train_script.py"


def test_split_argv_takes_everything_after_the_first_double_dash() -> None:
    assert split_argv(["compare", "--target", "cpu+bf16", "--", "python", "t.py", "--", "x"]) == (
        ["compare", "--target", "cpu+bf16"],
        ["python", "t.py", "--", "x"],
    )
    assert split_argv(["compare", "mlp-train"]) == (["compare", "mlp-train"], [])


def test_parse_command_forms_and_placeholders() -> None:
    cmd = parse_command(["python3", "-u", str(SCRIPT), "--device", "{device}", "--tag={side}"])
    assert cmd.target == str(SCRIPT.resolve()) and not cmd.module
    assert cmd.name == "script:train_script.py"
    side = parse_side("cpu+bf16", check_device=False)
    assert cmd.expand(side) == ["--device", "cpu", "--tag=cpu+bf16"]
    assert parse_command([str(SCRIPT)]).target == str(SCRIPT.resolve())
    module = parse_command(["python", "-m", "pkg.train", "--steps", "3"])
    assert module.module and module.target == "pkg.train" and module.args == ("--steps", "3")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "nothing after --"),
        (["torchrun", "train.py"], "runs a Python script, not 'torchrun'"),
        (["python", "-c", "print(1)"], "drop the interpreter option -c"),
        (["python", "missing_script.py"], "does not exist"),
        (["python", "-m"], "-m needs a module name"),
    ],
)
def test_bad_commands_are_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_command(argv)


def test_compile_cannot_be_applied_from_outside() -> None:
    with pytest.raises(UsageError, match="drop \\+compile"):
        check_side(parse_side("cpu+compile", check_device=False))
    with pytest.raises(UsageError, match="one process per side"):
        check_side(parse_side("cpu+nproc=2", check_device=False))
    check_side(parse_side("cpu+bf16+threads=1", check_device=False))


def test_job_fingerprints_the_command_and_script_but_not_weights() -> None:
    cmd = parse_command(["python", str(SCRIPT), "--device", "{device}"])
    a = make_job(cmd, "baseline", parse_side("cpu", check_device=False))
    b = make_job(cmd, "target", parse_side("cpu+bf16", check_device=False))
    assert a.fingerprint == b.fingerprint  # the same command on both sides
    assert a.parts["weights"] is None and a.parts["data"] is None
    assert a.description["contract"] == UNVERIFIED
    assert a.settings["args"] == ["--device", "cpu"] and b.settings["mode"] == "script"
    other = parse_command(["python", str(SCRIPT), "--steps", "3"])
    assert make_job(other, "target", parse_side("cpu")).fingerprint != a.fingerprint


@pytest.mark.slow
def test_script_mode_compares_an_unmodified_training_script(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    cmp = run_cli(
        "compare", "--baseline", "cpu", "--target", "cpu+bf16", "--json", "--out", str(out),
        "--", "python", str(SCRIPT), "--device", "{device}", "--steps", "12",
    )  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    verdict = json.loads(cmp.stdout)
    assert verdict["passed"] and verdict["workload"]["name"] == "script:train_script.py"
    assert verdict["fairness"]["verified"] is False
    assert verdict["fairness"]["note"] == UNVERIFIED
    assert verdict["contract"]["verified"] is False
    (loss,) = [c for c in verdict["quality"]["checks"] if c["name"] == "loss curve"]
    assert loss["passed"] and loss["final_rel"] < 0.02
    assert not verdict["numerics"]["available"]
    assert "no fp64 reference" in verdict["numerics"]["reason"]
    assert verdict["speed"]["baseline_median_s"] > 0 and verdict["speed"]["target_median_s"] > 0
    for role, device in (("baseline", "cpu"), ("target", "cpu")):
        b = load_side(out / role).first
        assert b.ok and b.manifest["script_mode"] and b.manifest["settings"]["precision"]
        assert len(b.metrics["step_samples_s"]) == 12 and len(b.numerics["losses"]) == 12
        assert b.metrics["script"]["optimizer_steps"] == {"AdamW": 12}
        assert b.metrics["memory"]["steps"]["host_peak_rss"] > 0
        log = (b.path / "stdout.log").read_text()
        assert f"on {device}" in log and "step   12" in log  # the script's own output
    _validate(out / "target" / "r00")


def _validate(bundle: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from parity.schemas import schema

    for name in ("manifest", "metrics", "numerics"):
        jsonschema.validate(json.loads((bundle / f"{name}.json").read_text()), schema(name))


@pytest.mark.slow
def test_a_script_that_fails_on_the_target_is_recorded(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text(FAILING)
    out = tmp_path / "cmp"
    cmp = run_cli(
        "compare", "--target", "cpu+bf16", "--json", "--out", str(out),
        "--", "python", str(script),
    )  # fmt: skip
    assert cmp.returncode == 1, cmp.stderr
    verdict = json.loads(cmp.stdout)
    assert verdict["sides"]["baseline"]["status"] == "ok"
    assert "the script exited with code 4" in verdict["sides"]["target"]["reason"]
    run = run_cli("run", "--device", "cpu", "--out", str(tmp_path / "one"), "--", str(script))
    assert run.returncode == 0, run.stderr
    assert load_bundle(tmp_path / "one").numerics["losses"][0] > 0


@pytest.mark.slow
def test_options_of_a_workload_cannot_go_with_a_script() -> None:
    cmp = run_cli("compare", "--steps", "3", "--", "python", str(SCRIPT))
    assert cmp.returncode == 2
    assert "--steps cannot go with a script" in cmp.stderr
