"""A stream redacted as it is written (a worker's stdout or stderr on its way to the
bundle's log, ``runner.logs``): held until it can be cut where no secret is split."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parity.safety.patterns import KEY_BEGIN, KEY_END

if TYPE_CHECKING:
    from parity.safety.redact import Redactor


class StreamRedactor:
    """Redacts a stream as it is written (a worker's stdout or stderr on its way to the
    bundle's log), so that no unredacted byte ever reaches a file, a killed run's hidden
    temporary bundle included.

    What arrives is held until it can be cut where no secret is split: the last
    ``overlap`` characters are always held (the start of a token whose end has not arrived
    yet, a value printed over two lines or two writes), and the rest is let out up to a
    line break where nothing that would be redacted crosses it, or, in a line longer than
    ``longest``, between two characters that are not both a token's
    (``Redactor.cut``). The lines of a private key block are dropped as ``Redactor.file``
    drops them.
    """

    def __init__(self, redactor: Redactor, *, longest: int = 1 << 16, overlap: int = 4096) -> None:
        import codecs

        self.redactor = redactor
        self.longest = longest
        self.overlap = overlap
        self.pending = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.in_key = False

    def feed(self, chunk: bytes) -> str:
        """The redacted text that can be let out now (none: ``""``)."""
        self.pending += self.decoder.decode(chunk)
        ready = len(self.pending) - self.overlap
        if ready <= 0:
            return ""
        text = self.pending
        cut = self.redactor.cut(text, ready)
        if text[cut - 1 : cut] != "\n" and len(text) < self.longest:
            return ""  # no safe line break yet: wait for one, unless the line is too long
        if cut == 0:  # too long, and what would be redacted fills the second half
            cut = ready
        done, self.pending = text[:cut], text[cut:]
        return self._text(done)

    def idle(self) -> str:
        """The stream has been quiet a while: the redacted whole lines held (none of them
        cut through something that would be redacted), the unfinished last line still
        held. (A value printed over two lines with a longer pause between them than the
        caller waits can only be found by its format.)"""
        end = self.pending.rfind("\n") + 1
        cut = self.redactor.cut(self.pending, end) if end else 0
        if cut == 0 or self.pending[cut - 1] != "\n":
            return ""
        done, self.pending = self.pending[:cut], self.pending[cut:]
        return self._text(done)

    def close(self) -> str:
        """The redacted rest (a last line without its newline)."""
        done, self.pending = self.pending + self.decoder.decode(b"", final=True), ""
        return self._text(done) if done else ""

    def _text(self, text: str) -> str:
        if not (self.in_key or KEY_BEGIN.search(text) or KEY_END.search(text)):
            return self.redactor.text(text)
        out = []
        for line in text.splitlines(keepends=True):
            if self.in_key:
                self.in_key = not KEY_END.search(line)
                continue
            self.in_key = bool(KEY_BEGIN.search(line)) and not KEY_END.search(line)
            out.append(self.redactor.text(line))
        return "".join(out)
