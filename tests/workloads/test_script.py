"""Script mode: an unmodified training script per side, instrumented from outside."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity import api
from parity.api import ComparisonResult
from parity.bundle import load_bundle, load_side
from parity.errors import UsageError
from parity.model.spec import parse_side
from parity.report import words
from parity.request import CompareRequest, RunRequest
from parity.workloads.repository import repository
from parity.workloads.script import (
    UNVERIFIED,
    check_side,
    describe,
    parse_command,
    split_argv,
)
from tests.conftest import FIXTURES
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
    side = parse_side("cpu+bf16")
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
        check_side(parse_side("cpu+compile"))
    with pytest.raises(UsageError, match="one process per side"):
        check_side(parse_side("cpu+nproc=2"))
    check_side(parse_side("cpu+bf16+threads=1"))


def test_a_script_is_fingerprinted_by_its_command_and_bytes_not_weights() -> None:
    cmd = parse_command(["python", str(SCRIPT), "--device", "{device}"])
    parts, desc = describe(cmd)
    assert parts.weights is None and parts.data is None and desc.contract == UNVERIFIED
    assert cmd.plan(parse_side("cpu+bf16")).args == ("--device", "cpu")
    other = parse_command(["python", str(SCRIPT), "--steps", "3"])
    assert describe(other)[0].digest() != parts.digest()
    assert describe(parse_command(["python", str(SCRIPT), "--device", "{device}"]))[0] == parts


def _compare(out: Path, target: str, script: list[str]) -> ComparisonResult:
    options = dict(target=target, out=str(out), script=tuple(script), report=False)
    return api.compare(CompareRequest.from_kwargs(**options))


@pytest.mark.slow
def test_script_mode_compares_an_unmodified_training_script(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    script = ["python", str(SCRIPT), "--device", "{device}", "--steps", "12"]
    verdict = _compare(out, "cpu+bf16", script).verdict
    assert verdict.passed and verdict.workload.name == "script:train_script.py"
    assert verdict.fairness.verified is False and verdict.fairness.note == UNVERIFIED
    assert verdict.contract.verified is False
    assert verdict.quality is not None and verdict.numerics is not None
    (loss,) = [c for c in verdict.quality.checks if c.name == "loss curve"]
    assert loss.passed and getattr(loss, "final_rel", 1.0) < 0.02
    assert not verdict.numerics.available
    assert "no numerics probe" in words.numerics_reason(verdict.numerics)
    assert verdict.speed is not None and verdict.speed.baseline_median_s
    for role, device in (("baseline", "cpu"), ("target", "cpu")):
        b = load_side(out / role).first
        assert b.ok and b.manifest.script_mode and b.manifest.resolved is not None
        # the script's repository (this checkout's, where it is one) with its state
        assert b.manifest.workload.description.repository == repository(SCRIPT)
        assert b.metrics is not None and b.metrics.script is not None
        assert len(b.metrics.step_samples_s) == 12 and len(b.losses) == 12
        assert b.metrics.script.optimizer_steps == {"AdamW": 12}
        assert (b.metrics.memory.steps.host_peak_rss or 0) > 0
        log = (b.path / "stdout.log").read_text()
        assert f"on {device}" in log and "step   12" in log  # the script's own output


@pytest.mark.slow
def test_a_script_that_fails_on_the_target_is_recorded(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text(FAILING)
    verdict = _compare(tmp_path / "cmp", "cpu+bf16", ["python", str(script)]).verdict
    assert verdict.exit_code == 1
    assert verdict.sides.baseline.status == "ok"
    assert "the script exited with code 4" in str(verdict.sides.target.reason)
    options = dict(out=str(tmp_path / "one"), script=(str(script),))
    bundle = api.run(RunRequest.from_kwargs("run", device="cpu", **options)).bundle
    assert bundle.ok and (bundle.losses[0] or 0) > 0
    assert load_bundle(tmp_path / "one").ok
