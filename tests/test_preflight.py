"""Issue 30, class 9: a side this machine cannot run is refused by the one pre-flight
(``parity.runner.prepare.preflight``) of every command that takes a side, before anything is
written: exit code 2, one line on stderr naming the side and the fix, no output
directory. The table is every such command x every kind of unusable side; each case
starts a worker (the pre-flight asks torch in it), so they are slow-marked."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from parity.model.spec import parse_side


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


#: (kind, the side spec, what the line says)
UNUSABLE = [
    ("index-beyond-count", "cpu:99", "cpu:99 does not exist"),
    ("not-installed", "neuron", "'neuron' is not available"),
    (
        "unknown-compile-backend",
        "cpu+compile=no_such_backend",
        "no_such_backend' is not registered",
    ),
    ("threads-beyond-cores", f"cpu+threads={_cores() + 1}", "logical cores"),
]

#: where a command refuses the side sooner, in words of its own: script mode compiles nothing
SOONER = {
    ("compare-script", "unknown-compile-backend"): "script mode cannot compile",
    ("run-script", "unknown-compile-backend"): "script mode cannot compile",
}


def _script(work: Path) -> str:
    (work / "train.py").write_text("import sys\nprint(sys.argv)\n")
    return "train.py"


def _sweep(work: Path, side: str, out: str) -> str:
    plan = work / "sweep.toml"
    plan.write_text(
        f'[sweep]\nworkloads = ["mlp-train"]\npairs = [["cpu", "{side}"]]\nout = "{out}"\n'
    )
    return str(plan)


#: each command that takes a side: (name, its arguments for a side and an output directory)
Command = Callable[[Path, str, str], list[str]]
COMMANDS: list[tuple[str, Command]] = [
    ("compare", lambda w, s, o: ["compare", "mlp-train", "--target", s, "--out", o]),
    ("compare-baseline", lambda w, s, o: ["compare", "mlp-train", "--baseline", s, "--out", o]),
    (
        "compare-script",
        lambda w, s, o: [
            "compare",
            "--baseline",
            "cpu",
            "--target",
            s,
            "--out",
            o,
            "--",
            "python",
            _script(w),
            "--device",
            "{device}",
        ],
    ),
    ("run", lambda w, s, o: ["run", "mlp-train", "--device", s, "--out", o]),
    ("run-script", lambda w, s, o: ["run", "--device", s, "--out", o, "--", "python", _script(w)]),
    ("scan", lambda w, s, o: ["scan", "mlp-train", "--device", s, "--out", o]),
    ("scale", lambda w, s, o: ["scale", "mlp-train", "--device", s, "--out", o]),
    ("rollback", lambda w, s, o: ["check", "rollback", "mlp-train", "--target", s, "--out", o]),
    ("recovery", lambda w, s, o: ["check", "recovery", "mlp-train", "--device", s, "--out", o]),
    ("soak", lambda w, s, o: ["check", "soak", "cnn-infer", "--device", s, "--out", o]),
    ("sweep", lambda w, s, o: ["sweep", _sweep(w, s, o)]),
]


def _installed(device: str) -> bool:
    import torch

    module = getattr(torch, device, None)
    return bool(module is not None and getattr(module, "is_available", lambda: False)())


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "side", "said"), UNUSABLE, ids=[u[0] for u in UNUSABLE])
@pytest.mark.parametrize(("command", "args"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_command_refuses_a_side_it_cannot_run_before_writing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    args: Command,
    kind: str,
    side: str,
    said: str,
) -> None:
    from tests.fixtures.cli import assert_refused, invoke, world

    if kind == "not-installed" and _installed(parse_side(side).device):
        pytest.skip(f"{side} is installed here")
    env = world(tmp_path, monkeypatch)
    work = tmp_path / "work"
    out = work / "out"
    result = invoke(*args(work, side, str(out)), env=env)
    assert_refused(command, result, SOONER.get((command, kind), said))
    line = result.stderr.strip()
    assert f"side {parse_side(side)}" in line, line
    assert not out.exists(), sorted(p.name for p in out.iterdir())
    assert not (work / "parity-runs").exists()


def test_the_table_covers_every_command_that_takes_a_side() -> None:
    """A new command with a side option joins the table above (or this test fails)."""
    from parity.request.options import TABLE, side

    taking = {c for o in TABLE.values() if o.read is side for c in o.commands}
    named = {name.split("-")[0] for name, _ in COMMANDS}
    assert taking <= named, taking - named


@pytest.mark.slow
def test_sides_this_machine_can_run_pass_the_preflight() -> None:
    """The pre-flight's job ends as a complete bundle where every side can run."""
    from parity.runner.launch import Launcher
    from parity.runner.prepare import preflight

    sides = [parse_side(s) for s in ("cpu", "cpu+bf16", "cpu+threads=1", "cpu+compile", "cpu")]
    with Launcher() as launcher:
        preflight(sides, launcher=launcher)
