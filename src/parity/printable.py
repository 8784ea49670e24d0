"""Text from a workload or a bundle made safe to show: control characters made visible.

A workload's name, its output, an exception message or a stderr tail can carry terminal
control sequences: OSC 52 writes the clipboard, OSC 0 the window title, ``ESC [2J``
clears the screen, ``ESC [5m`` blinks, a carriage return overwrites what a line said,
U+202E turns text around. A bundle is a file anyone can hand over, so ``parity diff``
of someone else's bundle must not let it speak to the terminal.

``printable`` is the one function that makes such text safe, and it is applied where
text leaves parity for a person: every part of a report view (``parity.report.parts``,
which the terminal, Markdown, HTML and result displays all format), the HTML escaper,
the progress lines and every error or note line (``parity.errors.one_line``). Each
character of the categories below is written as its Python escape (``\\x1b``,
``\\x9b``, ``\\u202e``), so the reader sees that it was there; nothing is dropped. JSON
output needs nothing: the JSON encoder escapes control characters itself.
"""

from __future__ import annotations

import re
import unicodedata

#: C0 and C1 controls (ESC, CSI 0x9b, OSC 0x9d, BEL, CR, ...), format characters
#: (bidirectional overrides, zero-width characters), lone surrogates, line and
#: paragraph separators
UNSAFE = ("Cc", "Cf", "Cs", "Zl", "Zp")
#: what keeps its meaning in a multi-line text (a stderr tail, a paragraph)
LAYOUT = "\n\t"
#: a quick test for the common case (nothing to escape): ASCII without controls
_PLAIN = re.compile(r"[\x20-\x7e\n\t]*")


def _escape(ch: str) -> str:
    return ch.encode("unicode_escape", errors="backslashreplace").decode("ascii")


def printable(text: object, *, layout: bool = True) -> str:
    """``text`` with every control, format and separator character escaped (``\\x1b``);
    newlines and tabs are kept where ``layout`` allows (else escaped too)."""
    s = str(text)
    if _PLAIN.fullmatch(s) and (layout or not ("\n" in s or "\t" in s)):
        return s
    keep = LAYOUT if layout else ""
    return "".join(
        _escape(ch) if ch not in keep and unicodedata.category(ch) in UNSAFE else ch for ch in s
    )
