"""A worker's log redacted in place and cut to the size a bundle keeps: its first and
last lines, with a line between that says how many bytes were left out; a cut falls
between words (never inside a token), and a private key block's lines are dropped."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO

from parity.safety.patterns import KEY_BEGIN, KEY_END, TOKEN_CHARS

#: a log longer than this keeps its first ``LOG_HEAD`` and last bytes, ``LOG_LIMIT`` in
#: all, in a bundle (the start says what ran, the end how it ended)
LOG_LIMIT = 8 << 20
LOG_HEAD = 1 << 20


def redact_file(
    path: Path, text: Callable[[str], str], *, limit: int = LOG_LIMIT
) -> tuple[int, int]:
    """Redact a text file in place (a worker's log), each line through ``text`` (a
    redactor's), via a temporary file; a file longer than ``limit`` bytes keeps its first
    ``LOG_HEAD`` (whole lines) and its last bytes, with a line between that says how many
    were left out. Returns (bytes the file had, bytes of it left out).

    Where the redacted copy cannot be written (the disk is full), the file is
    replaced by a one-line note, or removed: never left unredacted."""
    if not path.is_file() or path.is_symlink():
        return 0, 0
    tmp = path.with_name(f".{path.name}.redact")
    size = path.stat().st_size
    try:
        dropped = _copy(path, tmp, limit, text)
        os.replace(tmp, path)
        return size, dropped
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            path.write_text(f"[parity: this log was left out: it could not be redacted ({exc})]\n")
        return size, size


def _copy(src: Path, dst: Path, limit: int, text: Callable[[str], str]) -> int:
    """Copy ``src`` redacted, cut to its head and tail if longer than ``limit``; the
    bytes left out."""
    size = src.stat().st_size
    with (
        src.open("rb") as f,
        dst.open("w", encoding="utf-8") as out,
    ):
        if size <= limit:
            _lines(f, out, size, text)
            return 0
        head = min(LOG_HEAD, limit // 2)
        # the head, a line longer than it cut (between words: never inside a token)
        ended = _lines(f, out, head, text, cut=True)
        kept = f.tell()
        start = size - (limit - kept)
        f.seek(start - 1)
        if not f.readline(limit - kept).endswith(b"\n"):  # no line ends in the tail:
            f.seek(start - 1)  # it starts at the next word
            near = f.read(_WORD_LIMIT + 1)
            f.seek(start + _word_start(near))
        dropped = f.tell() - kept
        out.write(
            ("" if ended else "\n")
            + f"[parity: {dropped} bytes of this log were left out here (bytes {kept} to "
            f"{f.tell()} of {size}): its first and last lines are kept]\n"
        )
        _lines(f, out, size, text)
        return dropped


def _lines(
    f: IO[bytes], out: IO[str], end: int, text: Callable[[str], str], *, cut: bool = False
) -> bool:
    """Redacted lines from ``f`` up to byte ``end`` (a line across it is cut there, where
    ``cut`` after its last whole word, ``f`` left there); whether what was written
    ends a line."""
    in_key, ended = False, True  # inside a private key block, line by line
    while f.tell() < end:
        raw = f.readline(end - f.tell())
        if not raw:
            break
        ended = raw.endswith(b"\n")
        last = cut and not ended and f.tell() == end
        if last:  # the rest of the word goes with what is left out
            keep = _word_end(raw)
            f.seek(end - (len(raw) - keep))
            raw = raw[:keep]
        line = raw.decode("utf-8", errors="replace")
        if in_key:
            in_key = not KEY_END.search(line)
        else:
            in_key = bool(KEY_BEGIN.search(line)) and not KEY_END.search(line)
            out.write(text(line))
        if last:
            break
    return ended


#: how far a cut in a log moves to fall between words (no token is longer)
_WORD_LIMIT = 4096
_TOKEN_BYTES = frozenset(ch.encode()[0] for ch in TOKEN_CHARS)


def _word_end(raw: bytes) -> int:
    """Where ``raw``, the head of a line cut after it, can end without cutting a word in
    two (its length where it ends between words, or no word ends within
    ``_WORD_LIMIT`` bytes)."""
    if not raw or raw[-1] not in _TOKEN_BYTES:
        return len(raw)
    for i in range(len(raw) - 1, max(0, len(raw) - _WORD_LIMIT), -1):
        if not (raw[i - 1] in _TOKEN_BYTES and raw[i] in _TOKEN_BYTES):
            return i
    return len(raw)


def _word_start(near: bytes) -> int:
    """Past how many bytes after ``near[0]`` (the byte before a cut) the next word starts
    (0 where the cut already falls between words)."""
    for i in range(1, len(near)):
        if not (near[i - 1] in _TOKEN_BYTES and near[i] in _TOKEN_BYTES):
            return i - 1
    return 0
