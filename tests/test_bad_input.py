"""Bad input, table-driven: each case exits 2 with one line naming the problem and the
fix, and writes nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parity.bundle import write_json
from parity.cli import app
from tests.judge.synthetic import side_dir

runner = CliRunner()
Setup = Callable[[Path], None]


def nothing(root: Path) -> None:
    return None


def good_sides(root: Path) -> None:
    side_dir(root, "a", side="cpu", step_s=0.01, repeats=1)
    side_dir(root, "b", side="cpu+bf16", step_s=0.01, repeats=1)


def damaged(edit: Callable[[Path], None]) -> Setup:
    def setup(root: Path) -> None:
        good_sides(root)
        edit(root / "b" / "r00")

    return setup


def manifest_edit(key: str, value: object) -> Callable[[Path], None]:
    def edit(bundle: Path) -> None:
        data = json.loads((bundle / "manifest.json").read_text())
        data[key] = value
        write_json(bundle / "manifest.json", data)

    return edit


def retarget(part: str, value: object) -> Setup:
    def setup(root: Path) -> None:
        side_dir(root, "a", side="cpu", step_s=0.01, repeats=1)
        side_dir(root, "b", side="cpu", step_s=0.01, repeats=1, parts={part: value})

    return setup


def plan(text: str) -> Setup:
    def setup(root: Path) -> None:
        (root / "p.toml").write_text(text)

    return setup


PLAN_OK = '[workload]\nname = "mlp-train"\n[baseline]\nside = "cpu"\n[target]\nside = "cpu"\n'

CASES: list[tuple[str, list[str], Setup, str]] = [
    # side specs
    ("unknown device", ["compare", "mlp-train", "--target", "tpu9"], nothing, "unknown device"),
    ("unknown option", ["compare", "mlp-train", "--target", "cpu+bf17"], nothing, "unknown option"),
    ("malformed index", ["compare", "mlp-train", "--target", "cuda:x"], nothing, "malformed"),
    ("upper-case device", ["compare", "mlp-train", "--target", "CPU"], nothing, "malformed"),
    ("empty side", ["compare", "mlp-train", "--target", ""], nothing, "empty side spec"),
    ("threads zero", ["compare", "mlp-train", "--target", "cpu+threads=0"], nothing, "at least 1"),
    (
        "threads text",
        ["compare", "mlp-train", "--target", "cpu+threads=x"],
        nothing,
        "whole number",
    ),
    ("twice", ["compare", "mlp-train", "--target", "cpu+bf16+fp16"], nothing, "given twice"),
    (
        "emulate profile",
        ["compare", "mlp-train", "--target", "cpu+emulate=int4"],
        nothing,
        "unknown",
    ),
    ("fsdp alone", ["compare", "mlp-train", "--target", "cpu+fsdp"], nothing, "nproc"),
    ("nproc text", ["compare", "mlp-train", "--target", "cpu+nproc=two"], nothing, "whole number"),
    (
        "compile backend without compile",
        ["run", "mlp-train", "--device", "cpu+emulate", "--out", "o"],
        nothing,
        "emulate needs a profile",
    ),
    # workload specs and knobs
    ("unknown workload", ["compare", "nope"], nothing, "unknown workload"),
    ("missing user file", ["compare", "missing.py:Make"], nothing, "does not exist"),
    (
        "user file without factory",
        ["compare", "w.py:Nope"],
        lambda r: (r / "w.py").write_text("x = 1\n"),
        "has no 'Nope'",
    ),
    (
        "user file that raises",
        ["compare", "w.py:Make"],
        lambda r: (r / "w.py").write_text("raise ValueError('broken on import')\n"),
        "failed to import",
    ),
    (
        "user factory of the wrong type",
        ["compare", "w.py:Make"],
        lambda r: (r / "w.py").write_text("def Make(spec):\n    return 42\n"),
        "not a parity Workload",
    ),
    ("bad size", ["compare", "mlp-train", "--size", "huge"], nothing, "size 'huge'"),
    ("zero steps", ["compare", "mlp-train", "--steps", "0"], nothing, "--steps"),
    ("negative batch", ["compare", "mlp-train", "--batch-size", "-2"], nothing, "--batch-size"),
    ("negative seed", ["compare", "mlp-train", "--seed", "-1"], nothing, "--seed"),
    ("seq len on mlp", ["compare", "mlp-train", "--seq-len", "8"], nothing, "no sequence"),
    # options
    (
        "allow-diff field",
        ["compare", "mlp-train", "--allow-diff", "colour=x"],
        nothing,
        "not a fingerprint field",
    ),
    ("precision", ["compare", "mlp-train", "--precision", "3"], nothing, "--precision"),
    ("budget", ["compare", "mlp-train", "--budget", "0"], nothing, "--budget"),
    ("repeats", ["compare", "mlp-train", "--repeats", "0"], nothing, "--repeats"),
    ("price side", ["compare", "mlp-train", "--price", "gpu=3"], nothing, "--price"),
    ("price value", ["compare", "mlp-train", "--price", "target=cheap"], nothing, "numbers"),
    ("batch sizes", ["compare", "cnn-infer", "--batch-sizes", "1,x"], nothing, "whole numbers"),
    (
        "batch sizes on training",
        ["compare", "mlp-train", "--batch-sizes", "1,2"],
        nothing,
        "trains",
    ),
    (
        "scaling counts",
        ["scale", "mlp-train", "--device", "cpu", "--scaling", "0,2"],
        nothing,
        "at least 1",
    ),
    ("scaling inference", ["scale", "cnn-infer", "--device", "cpu"], nothing, "training workload"),
    (
        "resume without request",
        ["compare", "--resume", "empty"],
        lambda r: (r / "empty").mkdir(),
        "request.json",
    ),
    (
        "output not empty",
        ["compare", "mlp-train", "--out", "full"],
        lambda r: ((r / "full").mkdir(), (r / "full" / "x").write_text("x")),
        "not empty",
    ),
    # plan files
    ("missing plan", ["compare", "--plan", "nope.toml"], nothing, "does not exist"),
    ("plan not toml", ["compare", "--plan", "p.toml"], plan("[workload\n"), "not valid TOML"),
    (
        "plan unknown key",
        ["compare", "--plan", "p.toml"],
        plan(PLAN_OK + "[extra]\n"),
        "plan.extra is not a known key",
    ),
    (
        "plan bad side",
        ["compare", "--plan", "p.toml"],
        plan(PLAN_OK.replace('side = "cpu"\n[target]', 'side = "tpu"\n[target]')),
        "baseline.side",
    ),
    (
        "plan wrong type",
        ["compare", "--plan", "p.toml"],
        plan(PLAN_OK + '[measure]\nrepeats = "two"\n'),
        "measure.repeats must be int",
    ),
    (
        "plan idle fraction",
        ["compare", "--plan", "p.toml"],
        plan(PLAN_OK + "[cost]\nidle_fraction = 1\n"),
        "idle_fraction",
    ),
    (
        "init over a file",
        ["init", "exists.toml"],
        lambda r: (r / "exists.toml").write_text("x"),
        "already exists",
    ),
    # bundles
    ("diff missing", ["diff", "nowhere", "b"], good_sides, "does not exist"),
    (
        "diff not a bundle",
        ["diff", "plain", "b"],
        lambda r: (good_sides(r), (r / "plain").mkdir()),
        "neither a parity bundle",
    ),
    (
        "corrupt manifest",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "manifest.json").write_text('{"schema')),
        "not valid JSON",
    ),
    (
        "truncated metrics",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "metrics.json").write_text('{"step_samples_s": [0.1, 0.')),
        "not valid JSON",
    ),
    (
        "newer schema",
        ["diff", "a", "b"],
        damaged(manifest_edit("schema_version", 99)),
        "upgrade parity",
    ),
    (
        "tampered fingerprint",
        ["diff", "a", "b"],
        damaged(
            manifest_edit(
                "workload",
                {
                    "fingerprint": "0" * 64,
                    "parts": {
                        "config": "c" * 64,
                        "weights": "w" * 64,
                        "data": "d" * 64,
                        "batch_size": 8,
                        "seq_len": 64,
                        "steps": 40,
                        "seed": 0,
                        "quality": "q" * 64,
                    },
                },
            )
        ),
        "edited after it was written",
    ),
    ("bad status", ["diff", "a", "b"], damaged(manifest_edit("status", "great")), "has status"),
    (
        "pickle in a bundle",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "model.pt").write_bytes(b"\x80\x04K\x01.")),
        "pickles included",
    ),
    (
        "garbage safetensors",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "numerics.safetensors").write_bytes(b"nonsense")),
        "not a valid safetensors",
    ),
    (
        "stray file in a side",
        ["diff", "a", "b"],
        lambda r: (good_sides(r), (r / "b" / "notes.txt").write_text("x")),
        "did not write",
    ),
    ("mismatched workloads", ["diff", "a", "b"], retarget("seed", 7), "--allow-diff seed="),
    ("mismatched steps", ["diff", "a", "b"], retarget("steps", 99), "steps differ"),
    ("report of nothing", ["report", "nowhere"], nothing, "nowhere"),
]


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(("name", "args", "setup", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    name: str,
    args: list[str],
    setup: Setup,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    setup(work)
    before = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    monkeypatch.chdir(work)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (name, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, (name, result.stderr)
    assert lines[0].startswith("parity: error:") and message in lines[0], (name, lines[0])
    after = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    assert after == before, f"{name}: wrote {set(after) - set(before)}"
    shutil.rmtree(work)
