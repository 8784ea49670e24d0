"""Terminal control sequences from a workload or a bundle never reach a terminal raw
(issue 30, class 4): a bundle whose workload name, exception or output carries OSC 52
(the clipboard), a window title, clear-screen, blink, a C1 CSI, a carriage return or a
bidirectional override is shown by ``parity diff``, ``show``, ``report --md`` and
``report.html`` with each control character made visible, never as the byte itself.

The bundles are typed and written without a worker (``tests.fixtures.runs``), so these
run in seconds; the commands run as real subprocesses so that the bytes a terminal would
receive are what is checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from parity.bundle import SIDE_FILE, seal, write_doc
from parity.judge.verdict import judge
from parity.model.side import MeasurePlan, MeasureRecord, Stop
from parity.printable import printable
from parity.progress import LineProgress
from parity.report.markdown import format_markdown
from parity.report.parts import Section, Sentence, View, table
from tests.fixtures import bundles
from tests.fixtures.cli import invoke
from tests.fixtures.runs import write_bundle, write_verdict

#: (what it does, the sequence)
SEQUENCES = [
    ("clipboard (OSC 52)", "\x1b]52;c;cm0gLXJmIH4K\x07"),
    ("window title (OSC 0)", "\x1b]0;owned\x1b\\"),
    ("clear screen", "\x1b[2J\x1b[H"),
    ("blink", "\x1b[5mblink\x1b[0m"),
    ("C1 CSI", "\x9b31mred"),
    ("carriage return", "PASS\rFAIL"),
    ("bidi override", "\u202egnp.exe"),
]
#: where a bundle carries text: the workload's name, its exception, its output
PLACES = ["workload name", "exception", "output"]
RAW = (b"\x1b", b"\x9b", b"\r", "\u202e".encode())


def _hostile_run(out: Path, place: str, payload: str) -> Path:
    """A comparison directory: an ok baseline and a failed target whose bundles carry
    ``payload`` at ``place`` (``everywhere``: at every place)."""
    name = f"gpt-train{payload}" if place in ("workload name", "everywhere") else "gpt-train"
    write_bundle(out / "baseline" / "r00", role="baseline", spec="cpu", workload=name)
    target = out / "target" / "r00"
    write_bundle(target, role="target", spec="cpu+bf16", workload=name)
    man = bundles.manifest(
        role="target",
        spec="cpu+bf16",
        workload=bundles.workload_ref(
            name, "train", fingerprint_parts=bundles.parts(steps=12), batch_size=4, seq_len=16
        ),
        status="failed",
        reason=f"RuntimeError: {payload}"
        if place in ("exception", "everywhere")
        else "RuntimeError: x",
    )
    tail = "the last words"
    if place in ("output", "everywhere"):
        tail = f"line one\n{payload}\n{tail}"
    for f in target.iterdir():
        f.unlink()
    write_doc(target / "manifest.json", replace(man, stderr_tail=tail))
    seal(target)
    for role in ("baseline", "target"):
        stop = Stop(reason="repeats", message="1 repeat(s) per side, as asked")
        write_doc(out / role / SIDE_FILE, MeasureRecord(stop=stop, plan=MeasurePlan(repeats=1)))
    from parity.bundle import load_side

    write_verdict(out, judge(load_side(out / "baseline"), load_side(out / "target")))
    return out


def _raw(data: bytes) -> list[bytes]:
    return [b for b in RAW if b in data]


ALL = "".join(seq for _, seq in SEQUENCES)


@pytest.mark.parametrize("place", PLACES)
def test_diff_and_show_of_a_hostile_bundle_send_no_control_byte(tmp_path: Path, place: str) -> None:
    out = _hostile_run(tmp_path / "c", place, ALL)
    store = str(tmp_path / "index.sqlite")
    assert invoke("reindex", str(out), "--store", store).exit_code == 0
    rows = json.loads(invoke("ls", "--json", "--store", store).stdout)
    assert rows
    for args in (
        ["diff", str(out / "baseline"), str(out / "target")],
        ["diff", str(out / "baseline"), str(out / "target"), "--wide"],
        ["diff", str(out / "baseline"), str(out / "target"), "--verbose", "--wide"],
        ["ls", "--store", store],
        ["ls", "--store", store, "--wide"],
        *(["show", str(row["id"]), "--store", store] for row in rows),
    ):
        done = invoke(*args)
        assert done.exit_code in (0, 1), done.stderr
        assert not _raw(done.stdout_bytes) and not _raw(done.stderr_bytes), (args, place)
    # the text is still there (in full: the one screen may leave it out), its controls visible
    full = invoke("diff", str(out / "baseline"), str(out / "target"), "--verbose", "--wide")
    assert "\\x1b]52;c;" in full.stdout


@pytest.mark.parametrize("place", PLACES)
def test_reports_show_every_sequence_escaped(tmp_path: Path, place: str) -> None:
    out = _hostile_run(tmp_path / "c", place, ALL)
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    done = invoke("report", str(out), "--md", str(md), "--html", str(html))
    assert done.exit_code == 0, done.stderr
    assert not _raw(done.stdout_bytes) and not _raw(done.stderr_bytes)
    assert not _raw(md.read_bytes()), place
    page = html.read_bytes()
    assert not _raw(page), place
    assert b"\\x1b]52;c;" in page  # escaped, visible
    shown = invoke("report", str(out), "--md", "-")
    assert shown.exit_code == 0 and not _raw(shown.stdout_bytes)


@pytest.mark.slow
def test_a_terminal_running_diff_on_a_bundle_with_osc52_receives_no_escape_byte(
    tmp_path: Path,
) -> None:
    """The real command in a subprocess, every sequence in every place at once."""
    out = _hostile_run(tmp_path / "c", "everywhere", ALL)
    done = subprocess.run(
        [sys.executable, "-m", "parity", "diff", str(out / "baseline"), str(out / "target")],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert not _raw(done.stdout) and not _raw(done.stderr)
    assert b"\\x1b]52;c;" in done.stdout.replace(b"\n", b"")


@pytest.mark.parametrize(("what", "payload"), SEQUENCES)
def test_every_part_of_a_view_is_printable(what: str, payload: str) -> None:
    made = table([(f"h{payload}", "text")], [(f"cell{payload}",)], title=payload, legend=payload)
    view = View(
        title=payload,
        result="FAIL",
        subtitle=payload,
        notes=(payload,),
        sections=(
            Section(
                key="k",
                title=payload,
                result="FAIL",
                parts=(Sentence(text=payload, brief=True), replace(made, brief=True)),
            ),
        ),
    )
    text = format_markdown(view)
    assert not _raw(text.encode()), what
    assert printable(payload, layout=False) in text


@pytest.mark.parametrize(("what", "payload"), SEQUENCES)
def test_progress_lines_are_printable(what: str, payload: str) -> None:
    from parity.model.job import Event

    lines: list[str] = []
    sink = LineProgress(write=lines.append)
    sink(f"baseline{payload}", Event(t_ns=0, event="phase", phase=f"steps{payload}"))
    assert lines and not _raw("".join(lines).encode()), what


def test_printable_keeps_layout_and_plain_text() -> None:
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("a\tb\nc", layout=False) == "a\\tb\\nc"
    assert printable("naïve – ok ✓") == "naïve – ok ✓"
    assert printable("\x1b[2J\x9b\u202e\ud800") == "\\x1b[2J\\x9b\\u202e\\ud800"
