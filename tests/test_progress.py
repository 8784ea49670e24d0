"""Progress for people: throttled lines off a terminal, a live status on one, tqdm bars in
a notebook, and ``progress=`` of the Python API."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from parity import progress
from parity.errors import OptionError, SideError
from parity.model.job import Event
from parity.progress import LineProgress, LiveProgress, NotebookProgress, describe
from tests.fixtures.cli import invoke, stub_api


def phase(name: str) -> Event:
    return Event(t_ns=0, event="phase", phase=name)


def steps(done: int, total: int | None = 120) -> Event:
    return Event(t_ns=0, event="progress", done=done, steps=total)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_events_in_words() -> None:
    assert describe(phase("load")) == "phase load"
    assert describe(steps(40)) == "steps 40/120"
    assert describe(steps(7, None)) == "steps 7"
    assert describe(Event(t_ns=0, event="checkpoint", step=20)) == "checkpoint saved at step 20"


def test_lines_are_throttled_per_label_but_phases_always_shown() -> None:
    out: list[str] = []
    clock = Clock()
    sink = LineProgress(write=out.append, clock=clock)
    sink("baseline r01", phase("steps"))
    for t, done in ((0.0, 1), (0.3, 2), (0.6, 3), (1.2, 40)):
        clock.now = 100.0 + t
        sink("baseline r01", steps(done))
    sink("target r00", steps(1))  # another label is not throttled by the first
    clock.now = 101.3
    sink("baseline r01", phase("numerics"))
    sink("baseline r01", steps(120))  # the last step always
    assert out == [
        "parity: baseline r01: phase steps (0.0 s)\n",  # steps 1..3 within its second
        "parity: baseline r01: steps 40/120 (1.2 s)\n",
        "parity: target r00: steps 1/120 (0.0 s)\n",
        "parity: baseline r01: phase numerics (1.3 s)\n",
        "parity: baseline r01: steps 120/120 (1.3 s)\n",
    ]


def test_lines_go_to_stderr_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    LineProgress()("fp64 reference", phase("load"))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "parity: fp64 reference: phase load (0.0 s)\n"


def test_the_cli_display_is_live_on_a_terminal_and_lines_elsewhere() -> None:
    plain = Console(file=io.StringIO(), force_terminal=False)
    with progress.display(plain) as sink:
        assert isinstance(sink, LineProgress)
    terminal = Console(file=io.StringIO(), force_terminal=True)
    with progress.display(terminal) as sink:
        assert isinstance(sink, LiveProgress)
        sink("target r00", steps(3))
        assert "target r00: steps 3/120" in str(sink.status.status)


def test_progress_argument_of_the_api() -> None:
    def mine(label: str, event: Event) -> None:
        return None

    with progress.resolve(False) as sink:
        assert sink is None
    with progress.resolve(mine) as sink:
        assert sink is mine
    for default in (None, True):
        with progress.resolve(default) as sink:
            assert isinstance(sink, LineProgress)
    with pytest.raises(OptionError, match="progress must be a callable"), progress.resolve("yes"):
        pass


def test_a_notebook_gets_tqdm_bars(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []

    class Bar:
        def __init__(self, **kw: Any) -> None:
            self.kw, self.total, self.n, self.postfix, self.closed = kw, None, 0, "", False
            made.append(self)

        def refresh(self) -> None: ...

        def set_postfix_str(self, text: str) -> None:
            self.postfix = text

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(progress, "_notebook_sink", lambda: NotebookProgress(Bar))
    with progress.resolve(None) as sink:
        assert isinstance(sink, NotebookProgress)
        sink("baseline r00", phase("steps"))
        sink("baseline r00", steps(30))
    assert len(made) == 1 and made[0].kw["desc"] == "baseline r00"
    assert (made[0].total, made[0].n, made[0].postfix) == (120, 30, "phase steps")
    assert made[0].closed


def test_without_a_notebook_no_tqdm() -> None:
    assert progress.in_notebook() is False


def test_a_piped_compare_leaves_a_line_per_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``parity compare 2>progress.log | cat`` shows: every repeat, though all of
    them report within the same second."""
    import parity.api

    stub_api(monkeypatch)
    labels = ["baseline r00", "target r00", "target r01", "baseline r01"]

    def compare(request: object, *, progress: Any = None, resuming: bool = False) -> Any:
        for label in labels:
            progress(label, phase("load"))
            for done in range(1, 121):
                progress(label, steps(done))
        raise SideError("stopped after the events")

    monkeypatch.setattr(parity.api, "compare", compare)
    result = invoke("compare", "mlp-train", "--target", "cpu")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    for label in labels:
        mine = [line for line in lines if line.startswith(f"parity: {label}: ")]
        assert mine[0].startswith(f"parity: {label}: phase load")
        assert mine[-1].startswith(f"parity: {label}: steps 120/120")
        assert len(mine) <= 4  # throttled: not 121 lines
    assert lines[-1] == "parity: stopped after the events"


@pytest.mark.slow  # starts an interpreter
def test_progress_imports_nothing_heavy() -> None:
    code = (
        "import sys, parity.progress; print(sorted({'torch', 'rich', 'tqdm'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_progress_lines_reach_a_log_when_piped(tmp_path: Path) -> None:
    """End to end: ``parity compare ... 2>progress.log | cat``."""
    log = tmp_path / "progress.log"
    script = (
        f"{sys.executable} -m parity compare mlp-train --target cpu+bf16 --repeats 2 --steps 6 "
        f"--no-compliance --out {tmp_path / 'c'} 2>{log} | cat"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600)
    assert "PASS" in done.stdout or "FAIL" in done.stdout
    text = log.read_text()
    for label in ("baseline r00", "target r00", "target r01", "baseline r01"):
        assert f"parity: {label}: " in text, text
