"""Bad input, table-driven: each case exits 2 with one line naming the problem and the
fix, and writes nothing (not in the working directory, the cache or the store).

Command lines run in-process with the API stubbed (``tests.fixtures.cli.stub_api``), so
a case that validation let through fails with exit code 1 instead of running workers.
Files parity reads (``request.json``, bundles) are in ``tests/test_bad_files.py``, plan
files in ``tests/test_plan.py`` and Python keyword arguments in ``tests/test_api.py``;
``test_there_are_at_least_150_cases`` counts all of them.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.cli import invoke, refuses, stub_api, world

Setup = Callable[[Path], object]


def nothing(root: Path) -> None:
    return None


def files(**contents: str) -> Setup:
    def setup(root: Path) -> None:
        for name, text in contents.items():
            (root / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
            (root / name.replace("__", "/")).write_text(text)

    return setup


def dirs(*names: str) -> Setup:
    return lambda root: [(root / n).mkdir(parents=True) for n in names]


def fifo(name: str) -> Setup:
    return lambda root: os.mkfifo(root / name)


def corrupt_index(name: str) -> Setup:
    """An index whose first page is whole and whose tables are not (a disk that failed)."""

    def setup(root: Path) -> None:
        from parity.store import Store

        with Store.open(root / name):
            pass
        with (root / name).open("r+b") as f:
            f.seek(4096)
            f.write(b"\xff" * 8192)

    return setup


C = ["compare", "mlp-train"]
T = "--target"
CASES: list[tuple[str, list[str], Setup, str]] = [
    # side specs
    ("unknown device", [*C, T, "tpu9"], nothing, "unknown device 'tpu9'"),
    ("unknown option", [*C, T, "cpu+bf17"], nothing, "unknown option 'bf17'"),
    ("malformed index", [*C, T, "cuda:x"], nothing, "malformed device"),
    ("upper-case device", [*C, T, "CPU"], nothing, "malformed device"),
    ("empty side", [*C, T, ""], nothing, "empty side spec"),
    ("blank side", [*C, T, "   "], nothing, "empty side spec"),
    ("threads zero", [*C, T, "cpu+threads=0"], nothing, "at least 1"),
    ("threads text", [*C, T, "cpu+threads=x"], nothing, "whole number"),
    ("threads unicode digits", [*C, T, "cpu+threads=١"], nothing, "whole number"),
    ("precision twice", [*C, T, "cpu+bf16+fp16"], nothing, "given twice"),
    ("emulate profile", [*C, T, "cpu+emulate=int4"], nothing, "emulate=int4 is unknown"),
    ("emulate without profile", [*C, T, "cpu+emulate"], nothing, "emulate needs a profile"),
    ("fsdp alone", [*C, T, "cpu+fsdp"], nothing, "add nproc=N"),
    ("nproc text", [*C, T, "cpu+nproc=two"], nothing, "whole number"),
    ("nproc zero in spec", [*C, T, "cpu+nproc=0"], nothing, "nproc=0 must be at least 1"),
    ("empty option", [*C, T, "cpu++bf16"], nothing, "unknown option ''"),
    ("no device", [*C, T, "+bf16"], nothing, "malformed device"),
    ("unicode index", [*C, T, "cuda:١"], nothing, "malformed device"),
    ("escape in spec", [*C, T, "cpu\x1b[31m"], nothing, "\\x1b[31m"),
    ("bad baseline", [*C, "--baseline", "tpu"], nothing, "unknown device 'tpu'"),
    ("run device", ["run", "mlp-train", "--device", "gpu", "--out", "x"], nothing, "'gpu'"),
    ("scan device", ["scan", "mlp-train", "--device", "tpu"], nothing, "unknown device"),
    ("rollback target", ["check", "rollback", "mlp-train", T, "tpu"], nothing, "'tpu'"),
    ("rollback nproc", ["check", "rollback", "mlp-train", T, "cpu+nproc=2"], nothing, "drop nproc"),
    (
        "recovery nproc",
        ["check", "recovery", "mlp-train", "--device", "cpu+nproc=2"],
        nothing,
        "nproc",
    ),
    (
        "scale nproc",
        ["scale", "mlp-train", "--device", "cpu+nproc=2"],
        nothing,
        "already sets nproc",
    ),
    # workloads
    ("unknown workload", ["compare", "nope"], nothing, "unknown workload 'nope'"),
    ("missing user file", ["compare", "missing.py:Make"], nothing, "does not exist"),
    ("factory not a name", ["compare", "w.py:1x"], files(**{"w.py": ""}), "not a Python name"),
    ("hf without name", ["compare", "hf:"], nothing, "names nothing after hf"),
    ("hf blank name", ["compare", "hf:   "], nothing, "names nothing after hf"),
    ("empty workload", ["compare", ""], nothing, "unknown workload ''"),
    ("workload with escape", ["compare", "a\nb"], nothing, "'a\\nb'"),
    ("run without workload", ["run", "--device", "cpu"], nothing, "needs a workload"),
    ("scan unknown", ["scan", "nope", "--device", "cpu"], nothing, "unknown workload"),
    ("soak unknown", ["check", "soak", "nope", "--device", "cpu"], nothing, "unknown workload"),
    ("scale unknown", ["scale", "nope", "--device", "cpu"], nothing, "unknown workload"),
    # size knobs
    ("bad size", [*C, "--size", "huge"], nothing, "size 'huge' is unknown"),
    ("zero steps", [*C, "--steps", "0"], nothing, "--steps must be at least 1"),
    ("negative steps", [*C, "--steps", "-1"], nothing, "--steps must be at least 1"),
    ("huge steps", [*C, "--steps", "10000001"], nothing, "--steps must be at most 10000000"),
    ("steps not a number", [*C, "--steps", "1e3"], nothing, "Invalid value for '--steps'"),
    ("steps nan", [*C, "--steps", "nan"], nothing, "Invalid value for '--steps'"),
    ("steps unicode", [*C, "--steps", "١٢"], nothing, "Invalid value for '--steps'"),
    ("zero batch", [*C, "--batch-size", "0"], nothing, "--batch-size"),
    ("negative batch", [*C, "--batch-size", "-2"], nothing, "--batch-size"),
    ("huge batch", [*C, "--batch-size", "2000000"], nothing, "at most 1048576"),
    ("zero seq len", [*C, "--seq-len", "0"], nothing, "--seq-len"),
    ("negative seed", [*C, "--seed", "-1"], nothing, "--seed must be at least 0"),
    ("seed beyond 64 bits", [*C, "--seed", str(2**63)], nothing, "--seed must be at most"),
    ("hf config without value", [*C, "--hf-config", "novalue"], nothing, "KEY=VALUE"),
    ("hf config without key", [*C, "--hf-config", "=4"], nothing, "KEY=VALUE"),
    ("task unknown", [*C, "--task", "nope"], nothing, "--task 'nope' is unknown"),
    # measuring
    ("precision above one", [*C, "--precision", "3"], nothing, "--precision must be at most"),
    ("precision zero", [*C, "--precision", "0"], nothing, "--precision must be more than 0"),
    ("precision nan", [*C, "--precision", "nan"], nothing, "finite"),
    ("precision negative", [*C, "--precision", "-0.1"], nothing, "--precision"),
    ("budget zero", [*C, "--budget", "0"], nothing, "--budget must be more than 0"),
    ("budget inf", [*C, "--budget", "inf"], nothing, "--budget must be a finite number"),
    ("budget nan", [*C, "--budget", "nan"], nothing, "--budget must be a finite number"),
    ("budget negative", [*C, "--budget", "-5"], nothing, "--budget"),
    ("budget a month", [*C, "--budget", "1e9"], nothing, "--budget must be at most"),
    ("repeats zero", [*C, "--repeats", "0"], nothing, "--repeats must be at least 1"),
    ("repeats too many", [*C, "--repeats", "1001"], nothing, "--repeats must be at most 1000"),
    ("timeout zero", [*C, "--timeout", "0"], nothing, "--timeout must be at least 1"),
    ("timeout nan", [*C, "--timeout", "nan"], nothing, "--timeout must be a finite number"),
    ("timeout inf", [*C, "--timeout", "inf"], nothing, "--timeout must be a finite number"),
    ("timeout negative", [*C, "--timeout", "-1"], nothing, "--timeout"),
    ("timeout huge", [*C, "--timeout", "1e308"], nothing, "--timeout must be at most"),
    ("nproc zero", [*C, "--nproc", "0"], nothing, "--nproc must be at least 1"),
    ("nproc negative", [*C, "--nproc", "-1"], nothing, "--nproc"),
    ("nproc huge", [*C, "--nproc", "5000"], nothing, "--nproc must be at most 4096"),
    ("nnodes zero", [*C, "--nnodes", "0"], nothing, "--nnodes must be at least 1"),
    ("nnodes negative", [*C, "--nnodes", "-1"], nothing, "--nnodes must be at least 1"),
    ("run nproc zero", ["run", "mlp-train", "--device", "cpu", "--nproc", "0"], nothing, "--nproc"),
    ("target loss nan", [*C, "--target-loss", "nan"], nothing, "--target-loss must be a finite"),
    ("target loss inf", [*C, "--target-loss", "inf"], nothing, "--target-loss must be a finite"),
    ("target loss -inf", [*C, "--target-loss", "-inf"], nothing, "finite"),
    ("target loss huge", [*C, "--target-loss", "1e308"], nothing, "--target-loss must be at most"),
    # prices
    ("price side", [*C, "--price", "gpu=3"], nothing, "--price 'gpu=3'"),
    ("price value", [*C, "--price", "target=cheap"], nothing, "must be numbers"),
    ("price zero", [*C, "--price", "target=0"], nothing, "--price must be more than 0"),
    ("price negative", [*C, "--price", "target=-1"], nothing, "--price must be more than 0"),
    ("price nan", [*C, "--price", "target=nan"], nothing, "--price must be a finite number"),
    ("price inf", [*C, "--price", "target=inf"], nothing, "--price must be a finite number"),
    ("price huge", [*C, "--price", "target=1e308"], nothing, "--price must be at most"),
    ("price no accelerators", [*C, "--price", "target=3:0"], nothing, "accelerators must be"),
    ("slo metric", [*C, "--slo", "speed_p99=1s"], nothing, "--slo 'speed_p99' is not a limit"),
    ("slo time", [*C, "--slo", "ttft_p99=soon"], nothing, "must be a time, e.g. 200ms"),
    ("slo twice", [*C, "--slo", "ttft_p99=1s,ttft_p99=2s"], nothing, "given twice"),
    ("production key", [*C, "--production", "size=7B"], nothing, "not a production key"),
    ("production count", [*C, "--production", "parameters=big"], nothing, "must be a count"),
    ("production optimizer", [*C, "--production", "optimizer=x"], nothing, "use one of adamw"),
    ("price accelerators text", [*C, "--price", "target=3:x"], nothing, "must be numbers"),
    ("price many accelerators", [*C, "--price", "target=3:5000"], nothing, "at most 4096"),
    ("price without side", [*C, "--price", "=3"], nothing, "write baseline="),
    ("price without value", [*C, "--price", "target"], nothing, "write baseline="),
    ("diff price", ["diff", "a", "b", "--price", "target=nan"], nothing, "finite"),
    # batch sizes
    (
        "batch sizes text",
        ["compare", "cnn-infer", "--batch-sizes", "1,x"],
        nothing,
        "whole numbers",
    ),
    ("batch sizes zero", ["compare", "cnn-infer", "--batch-sizes", "0,4"], nothing, "at least 1"),
    ("batch sizes empty", ["compare", "cnn-infer", "--batch-sizes", ""], nothing, "at least one"),
    ("batch sizes commas", ["compare", "cnn-infer", "--batch-sizes", ","], nothing, "at least one"),
    ("batch sizes negative", ["compare", "cnn-infer", "--batch-sizes", "1,-2"], nothing, "whole"),
    ("batch sizes fraction", ["compare", "cnn-infer", "--batch-sizes", "1.5"], nothing, "whole"),
    (
        "batch sizes huge",
        ["compare", "cnn-infer", "--batch-sizes", "1,9" + "9" * 40],
        nothing,
        "whole",
    ),
    (
        "batch size and sizes",
        ["compare", "cnn-infer", "--batch-sizes", "1,2", "--batch-size", "4"],
        nothing,
        "not both",
    ),
    # judging
    ("allow-diff field", [*C, "--allow-diff", "colour=x"], nothing, "not a fingerprint field"),
    ("allow-diff empty", [*C, "--allow-diff", ""], nothing, "not a fingerprint field"),
    ("diff allow-diff", ["diff", "a", "b", "--allow-diff", "x=y"], nothing, "fingerprint field"),
    # script mode
    ("workload and script", [*C, "--", "python", "x.py"], nothing, "cannot go with a script"),
    ("knob and script", ["compare", "--steps", "3", "--", "python", "t.py"], nothing, "--steps"),
    ("nothing after --", [*C, "--"], nothing, "nothing after --"),
    ("script for env", ["env", "--", "python", "x.py"], nothing, "only parity compare"),
    ("script for scan", ["scan", "x", "--device", "cpu", "--", "python"], nothing, "only parity"),
    ("script missing", ["compare", T, "cpu", "--", "python", "gone.py"], nothing, "does not exist"),
    (
        "script run no out",
        ["run", "--device", "cpu", "--", "python", "t.py"],
        files(**{"t.py": ""}),
        "--out",
    ),
    # checks
    (
        "soak negative duration",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--duration", "-5m"],
        nothing,
        "not a duration",
    ),
    (
        "soak zero duration",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--duration", "0s"],
        nothing,
        "more than zero",
    ),
    (
        "soak text duration",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--duration", "abc"],
        nothing,
        "not a duration",
    ),
    (
        "soak endless",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--duration", "1e308"],
        nothing,
        "--duration",
    ),
    (
        "soak nan duration",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--duration", "nan"],
        nothing,
        "--duration",
    ),
    (
        "soak warmup",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--warmup", "0.95"],
        nothing,
        "--warmup",
    ),
    (
        "soak warmup negative",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--warmup", "-0.1"],
        nothing,
        "--warmup",
    ),
    (
        "soak drift zero",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--max-drift", "0"],
        nothing,
        "--max-drift",
    ),
    (
        "soak drift nan",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--max-drift", "nan"],
        nothing,
        "finite",
    ),
    (
        "soak growth negative",
        ["check", "soak", "cnn-infer", "--device", "cpu", "--max-host-growth", "-1"],
        nothing,
        "--max-host-growth",
    ),
    (
        "rollback k zero",
        ["check", "rollback", "mlp-train", T, "cpu", "--k", "0"],
        nothing,
        "--k must be at least 1",
    ),
    (
        "rollback m negative",
        ["check", "rollback", "mlp-train", T, "cpu", "--m", "-1"],
        nothing,
        "--m",
    ),
    (
        "recovery k huge",
        ["check", "recovery", "mlp-train", "--device", "cpu", "--k", "100000000"],
        nothing,
        "--k must be at most",
    ),
    # scaling
    (
        "scaling zero",
        ["scale", "mlp-train", "--device", "cpu", "--scaling", "0,2"],
        nothing,
        "at least 1",
    ),
    (
        "scaling text",
        ["scale", "mlp-train", "--device", "cpu", "--scaling", "x"],
        nothing,
        "whole numbers",
    ),
    (
        "scaling empty",
        ["scale", "mlp-train", "--device", "cpu", "--scaling", ""],
        nothing,
        "names no process count",
    ),
    (
        "scaling huge",
        ["scale", "mlp-train", "--device", "cpu", "--scaling", "1,5000"],
        nothing,
        "at most 4096",
    ),
    # history
    ("ls limit zero", ["ls", "--limit", "0"], nothing, "--limit must be at least 1"),
    ("ls limit negative", ["ls", "--limit", "-5"], nothing, "--limit"),
    ("show unknown", ["show", "nope"], nothing, "no run 'nope'"),
    ("show blank", ["show", " "], nothing, "give a run id"),
    ("reindex nothing", ["reindex"], nothing, "nothing to reindex"),
    ("store not sqlite", ["ls", "--store", "f.txt"], files(**{"f.txt": "x"}), "not a parity index"),
    ("store a directory", ["ls", "--store", "d"], dirs("d"), "cannot open the index"),
    ("store corrupt", ["ls", "--store", "i.sqlite"], corrupt_index("i.sqlite"), "corrupt"),
    ("show corrupt", ["show", "c1", "--store", "i.sqlite"], corrupt_index("i.sqlite"), "corrupt"),
    ("reindex missing", ["reindex", "/nonexistent-parity-test"], nothing, "does not exist"),
    ("reindex a file", ["reindex", "f.txt"], files(**{"f.txt": "x"}), "is not a directory"),
    ("reindex name too long", ["reindex", "x" * 5000], nothing, "cannot be read"),
    # outputs that could never be written: refused before anything runs
    ("out under a file", [*C, "--out", "f.txt/out"], files(**{"f.txt": "x"}), "which is a file"),
    ("out a file", [*C, "--out", "f.txt"], files(**{"f.txt": "x"}), "is a file"),
    ("out in /proc", [*C, "--out", "/proc/parity-out"], nothing, "cannot be written"),
    ("out in /proc/self", [*C, "--out", "/proc/self/parity"], nothing, "cannot be written"),
    ("out too long", [*C, "--out", "d/" + "x/" * 2100], nothing, "beyond the system's limit"),
    ("out name too long", [*C, "--out", "x" * 300], nothing, "beyond the limit of 255"),
    ("out not utf-8", [*C, "--out", "caf\udce9"], nothing, "not UTF-8"),
    (
        "run out in /proc",
        ["run", "mlp-train", "--device", "cpu", "--out", "/proc/p"],
        nothing,
        "/proc",
    ),
    (
        "scan out under a file",
        ["scan", "mlp-train", "--device", "cpu", "--out", "f/x"],
        files(f="x"),
        "a file",
    ),
    ("plan a fifo", ["compare", "--plan", "p.toml"], fifo("p.toml"), "not a regular file"),
    ("plan a directory", ["compare", "--plan", "d"], dirs("d"), "not a regular file"),
    ("plan /dev/zero", ["compare", "--plan", "/dev/zero"], nothing, "not a regular file"),
    # other commands
    ("schema name", ["schema", "nope"], nothing, "'nope' is not one of"),
    ("init over a file", ["init", "p.toml"], files(**{"p.toml": "x"}), "already exists"),
    ("init over a dir", ["init", "d", "--force"], dirs("d"), "cannot write the plan"),
    ("init nowhere", ["init", "/nonexistent-parity-test/p.toml"], nothing, "cannot write the plan"),
    # Typer's own usage errors, as one line
    ("unknown flag", [*C, "--no-such-flag"], nothing, "No such option: --no-such-flag"),
    ("missing value", [*C, "--steps"], nothing, "--steps"),
    ("missing device", ["run", "mlp-train"], nothing, "Missing option '--device'"),
    ("missing bundle", ["diff", "a"], nothing, "Missing argument 'TARGET'"),
    ("unknown command", ["frobnicate"], nothing, "No such command 'frobnicate'"),
    ("extra argument", [*C, "extra"], nothing, "unexpected extra argument"),
    ("check alone", ["check"], nothing, "parity check needs a command"),
    ("nothing at all", [], nothing, "parity needs a command"),
]


@pytest.mark.parametrize(("name", "args", "setup", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    name: str,
    args: list[str],
    setup: Setup,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refuses(args, message, setup, tmp_path, monkeypatch)


def test_long_values_are_shortened_and_control_characters_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = world(tmp_path, monkeypatch)
    stub_api(monkeypatch)
    result = invoke("compare", "x" * 100_000 + "\n\x1b[2J", env=env)
    line = result.stderr.strip()
    assert result.exit_code == 2 and "\n" not in line and "\x1b" not in line
    assert len(line) < 1000 and "more)..." in line


def test_there_are_at_least_150_cases() -> None:
    from tests.api.test_api import API_CASES
    from tests.request.test_plan import PLAN_CASES
    from tests.test_bad_files import FILE_CASES

    total = len(CASES) + len(FILE_CASES) + len(PLAN_CASES) + len(API_CASES)
    assert total >= 150, total
    assert len(CASES) >= 100


@pytest.mark.parametrize("command", [["ls"], ["show", "c1"], ["reindex", "."]])
def test_a_locked_index_is_waited_for_then_said_locked(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import parity.store.engine
    from parity.store import Store
    from tests.fixtures.cli import assert_refused

    monkeypatch.setattr(parity.store.engine, "SQLITE_TIMEOUT_S", 0.3)
    env = world(tmp_path, monkeypatch)
    index = tmp_path / "work" / "i.sqlite"
    with Store.open(index):
        pass
    holder = sqlite3.connect(index, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another parity writing it
        result = invoke(*command, "--store", str(index), env=env)
    finally:
        holder.close()
    assert_refused(" ".join(command), result, "is locked by another parity process")
    assert "delete" not in result.stderr and index.stat().st_size > 0
