"""Capped logs keep their head and tail and say how much was left out (issue 30, class
11): in the log itself, in the bundle's ``logs.json``, in the verdict's side and in the
view. Bundles are typed and sealed without a worker; the worker's own flood is in
``tests/runner/test_io_errors.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from parity.bundle import DIGEST, LOGS_FILE, load_bundle, load_side, seal
from parity.judge.verdict import judge
from parity.report.parts import sentences
from parity.report.view import build_view
from parity.safety.logfile import LOG_HEAD
from parity.safety.redact import Redactor
from tests.fixtures.runs import write_bundle

KIB = 1 << 10


def lines(n: int, width: int = 100) -> bytes:
    """``n`` numbered lines, the first and last recognisable."""
    body = [f"line {i:08d} ".ljust(width - 1, "x") + "\n" for i in range(n)]
    body[0], body[-1] = "the first line\n", "the last line\n"
    return "".join(body).encode()


#: (what is written, the limit, whether it is cut)
LOGS: list[tuple[str, Callable[[], bytes], int, bool]] = [
    ("many lines", lambda: lines(40_000), 256 * KIB, True),
    ("one line without an end", lambda: b"the first line" + b"y" * (3 << 20), 256 * KIB, True),
    ("a long first line", lambda: b"z" * (2 << 20) + b"\n" + lines(5_000), 512 * KIB, True),
    ("under the limit", lambda: lines(100), 256 * KIB, False),
]


@pytest.mark.parametrize(("what", "make", "limit", "cut"), LOGS, ids=[c[0] for c in LOGS])
def test_a_long_log_keeps_its_head_and_tail_and_counts_what_it_left_out(
    tmp_path: Path, what: str, make: Callable[[], bytes], limit: int, cut: bool
) -> None:
    log = tmp_path / "stdout.log"
    data = make()
    log.write_bytes(data)
    written, dropped = Redactor().file(log, limit=limit)
    kept = log.read_text()
    assert written == len(data)
    assert (dropped > 0) == cut, what
    if not cut:
        assert kept == data.decode()
        return
    assert kept.startswith(data[:14].decode()), what  # the head
    if data.endswith(b"the last line\n"):
        assert kept.endswith("the last line\n"), what  # the tail
    assert f"[parity: {dropped} bytes of this log were left out here" in kept
    assert len(kept.encode()) <= limit + LOG_HEAD + 300, what
    # what was kept and what was left out add up to what was written
    marker = next(x for x in kept.splitlines(keepends=True) if x.startswith("[parity: "))
    shown = len(kept.encode()) - len(marker.encode())  # (+1: a newline before the marker)
    assert shown + dropped in (written, written + 1), what


def _flooded(root: Path, role: str, size: int) -> Path:
    """A sealed bundle whose stdout.log had ``size`` bytes when it was sealed."""
    spec = "cpu" if role == "baseline" else "cpu+bf16"
    bundle = write_bundle(root / role, role=role, spec=spec)
    (bundle / "stdout.log").write_bytes(lines(size // 100)[:size])
    (bundle / DIGEST).unlink()
    seal(bundle)
    return bundle


def test_the_cut_is_in_the_bundle_the_verdict_and_the_view(tmp_path: Path) -> None:
    base = _flooded(tmp_path, "baseline", 100 * KIB)
    target = _flooded(tmp_path, "target", 12 << 20)
    assert not (base / LOGS_FILE).exists()  # nothing cut, nothing said
    logs = load_bundle(target).logs
    assert logs is not None and [c.name for c in logs.cut] == ["stdout.log"]
    cut = logs.cut[0]
    assert cut.written == len(lines((12 << 20) // 100)) and cut.dropped > 3 << 20
    verdict = judge(load_side(base), load_side(target))
    assert verdict.sides.baseline.logs_cut is None
    said = verdict.sides.target.logs_cut
    assert said and "stdout.log was cut" in said[0] and "MiB were left out" in said[0]
    view = build_view(verdict)
    sides = view.section("sides")
    assert sides is not None
    said_in_view = [p.text for p in sentences(sides.parts) if "stdout.log was cut" in p.text]
    assert said_in_view == [f"target {said[0]}"]
