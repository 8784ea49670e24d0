"""One redactor for everything parity writes or prints that came from outside.

Workload output and exceptions, stderr tails and failure reasons, script command lines and
environment variables can all carry credentials. Before any of it reaches a bundle, the
verdict, a report, the index or the terminal, it passes through ``Redactor``:

- values it knows are secret are replaced wherever they appear: the value of every
  environment variable whose name looks like a credential (``*_TOKEN``, ``*_KEY``,
  ``*_SECRET``, ``*_PASSWORD``, ``*_PWD``, ``*_PASS``, ``*_BEARER``, ``*AUTH``, ``*DSN``...)
  and of every variable the user names in ``PARITY_REDACT=NAME,...``;
- text that looks like a credential is replaced by pattern: cloud and service tokens
  (AWS, GitHub, Hugging Face, OpenAI, Slack, Google, Stripe), JSON web tokens, private key
  blocks, ``Bearer`` and ``Basic`` credentials and the value of an HTTP ``Authorization``
  header whatever its scheme, passwords and token-long user names in URLs
  (``scheme://user:password@host``, ``https://TOKEN@host``), signed URLs' signature and
  credential query parameters (``sig=``, ``X-Amz-Signature=``, ``X-Amz-Credential=``,
  ``X-Goog-Signature=``, ``token=``, ``access_token=``, ``key=``, ...) and ``name=value`` or
  ``--name value`` pairs whose name looks secret, also inside option strings such as
  ``XLA_FLAGS``;
- a command line keeps its shape: the value of a flag whose name looks secret is masked;
- a URL that is recorded (where a package was installed from) loses its user name and
  password altogether (``url``): ``https://user:token@host/repo`` is ``https://host/repo``.

A worker's stdout and stderr pass through ``stream.StreamRedactor`` on their way to the
bundle's logs (``runner.logs``), so even the hidden temporary bundle of a killed run holds
them redacted; a log is cut to the size a bundle keeps by ``logfile``. The replacement
is ``<redacted>``. The rule is deliberately broad: a redacted harmless value costs
nothing, a leaked token costs a rotation. What looks secret is ``patterns``'.
"""

from __future__ import annotations

import copy
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from parity.safety.logfile import LOG_LIMIT, redact_file
from parity.safety.patterns import (
    AUTH,
    FLAG,
    HEX,
    MIN_VALUE,
    NOT_TOKEN,
    PAIR,
    QUERY,
    QUERY_PAIR,
    SOURCE_FILE,
    SPLIT_MIN,
    TOKENS,
    URL_PASSWORD,
    URL_TOKEN,
    USERINFO,
    Could,
    is_secret_name,
)

REDACTED = "<redacted>"
ENV_VAR = "PARITY_REDACT"


def url_secrets(text: str) -> list[str]:
    """The passwords and secret query values of the URLs in ``text`` (as written and
    percent-decoded: a driver may print either)."""
    from urllib.parse import unquote

    found = [m["pw"] for m in URL_PASSWORD.finditer(text)]
    found += [m["value"] for m in QUERY.finditer(text)]
    found += [m["value"] for m in QUERY_PAIR.finditer(text) if is_secret_name(m["name"])]
    found += [unquote(v) for v in found]
    return [v for v in dict.fromkeys(found) if len(v) >= MIN_VALUE and REDACTED not in v]


#: secret values this process learned from a URL it was given (``remember``)
_REMEMBERED: set[str] = set()


def remember(values: Iterable[str]) -> None:
    """Know ``values`` as secret from now on, in every redactor of this process (a
    database password read from ``--store``)."""
    _REMEMBERED.update(v for v in values if len(v) >= MIN_VALUE)


def _masked(match: re.Match[str]) -> str:
    """``head`` kept, the value masked (once: a value already masked stays as it is)."""
    if match["value"].startswith(REDACTED):
        return match[0]
    return match["head"] + REDACTED


def _walk(args: Sequence[str]) -> Iterator[tuple[str, str]]:
    """Each argument of a command line with what it is: ``plain``, a secret-named ``flag``
    whose value follows, a ``flag=value`` with a secret name, or that ``value``."""
    take_next = False
    for arg in args:
        if take_next:
            take_next = False
            yield arg, "value"
            continue
        name, eq, _ = arg.partition("=")
        if arg.startswith("-") and is_secret_name(name.lstrip("-")):
            take_next = not eq
            yield arg, "flag=" if eq else "flag"
            continue
        yield arg, "plain"


def flag_values(args: Sequence[str]) -> list[str]:
    """The values of a command line's secret-named flags (``--token X``, ``--token=X``)."""
    return [
        arg.partition("=")[2] if kind == "flag=" else arg
        for arg, kind in _walk(args)
        if kind in ("value", "flag=")
    ]


def carried_values(args: Sequence[str]) -> list[str]:
    """The secrets a command line carries: its secret-named flags' values, and what the
    patterns find in any argument (a signed URL's signature, a header's credential, a
    password or token in a URL, a token by its format), so that a program that prints
    one of them alone is redacted too."""
    found = flag_values(args)
    for arg in args:
        found += [m[0] for m in TOKENS.finditer(arg)]
        for pattern, group in ((AUTH, "value"), (QUERY, "value"), (URL_TOKEN, "user")):
            found += [m[group] for m in pattern.finditer(arg)]
        found += [m["pw"] for m in URL_PASSWORD.finditer(arg)]
    return [v for v in dict.fromkeys(found) if not v.startswith(REDACTED)]


class Redactor:
    """Redacts known secret values and credential-looking text."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        marked = {n.strip() for n in env.get(ENV_VAR, "").split(",") if n.strip()}
        values = {
            value
            for name, value in env.items()
            if (name in marked or is_secret_name(name)) and len(value) >= MIN_VALUE
        }
        # a password or secret query value in any variable's URL (``PARITY_STORE``,
        # ``DATABASE_URL``, ``MLFLOW_TRACKING_URI``), and those learned from given URLs
        values.update(v for value in env.values() if "://" in value for v in url_secrets(value))
        values.update(_REMEMBERED)
        # longest first, so that a value containing another is replaced whole
        self.values = sorted(values, key=len, reverse=True)
        self.marked = marked

    def text(self, text: str) -> str:
        """``text`` with every secret value and credential-looking part replaced, a known
        value or a token split over lines included (``print(token[:8]); print(token[8:])``)."""
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        text = self._across_lines(text)
        may = Could(text)
        if may.token:
            text = TOKENS.sub(REDACTED, text)
        if may.auth:
            text = AUTH.sub(_masked, text)
        if may.query:
            text = QUERY.sub(_masked, text)
        if may.url:
            text = URL_TOKEN.sub(lambda m: m["head"] + REDACTED, text)
            text = URL_PASSWORD.sub(lambda m: m["head"] + REDACTED, text)
        if may.named:
            text = FLAG.sub(self._pair, text)
            text = PAIR.sub(self._pair, text)
        return text

    def _across_lines(self, text: str) -> str:
        """Known values and token formats that appear in ``text`` only with line breaks
        inside them: each piece on each line replaced."""
        inner = text.rstrip("\r\n")
        if "\n" not in inner and "\r" not in inner:  # one line: nothing split
            return text
        flat = text.replace("\r", "").replace("\n", "")
        if not any(len(v) >= SPLIT_MIN and v in flat for v in self.values) and not (
            Could(flat).token and TOKENS.search(flat)
        ):
            return text  # (the common case, at C speed)
        kept = [i for i, ch in enumerate(text) if ch not in "\r\n"]
        flat = "".join(text[i] for i in kept)
        hidden = bytearray(len(text))

        def hide(kept: list[int], start: int, end: int) -> None:
            if end > start and kept[end - 1] - kept[start] + 1 > end - start:  # a break in it
                for i in kept[start:end]:
                    hidden[i] = 1

        for start, end in self._known(flat):
            hide(kept, start, end)
        # a token format across one line break (two lines at a time: a format's greed
        # must not take the line after its end)
        at = 0
        lines = []
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            lines.append(list(range(at, at + len(body))))
            at += len(line)
        for first, second in itertools.pairwise(lines):
            pair = first + second
            joined = "".join(text[i] for i in pair)
            for m in TOKENS.finditer(joined):
                hide(pair, *m.span())
        return _hidden(text, hidden) if any(hidden) else text

    def _known(self, text: str) -> Iterator[tuple[int, int]]:
        """Where the known values long enough to be looked for split are in ``text``."""
        for value in self.values:
            if len(value) < SPLIT_MIN:
                continue
            at = text.find(value)
            while at >= 0:
                yield at, at + len(value)
                at = text.find(value, at + 1)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where in ``text`` something would be redacted (over-wide: whole matches), so that
        a cut made there would leave its halves unrecognised on both sides."""
        found = list(self._known(text))
        may = Could(text)
        for pattern, could in (
            (TOKENS, may.token),
            (AUTH, may.auth),
            (QUERY, may.query),
            (URL_TOKEN, may.url),
            (URL_PASSWORD, may.url),
        ):
            found += [m.span() for m in pattern.finditer(text)] if could else []
        for pattern in (FLAG, PAIR) if may.named else ():
            found += [m.span() for m in pattern.finditer(text) if is_secret_name(m["name"])]
        return found

    def cut(self, text: str, at: int) -> int:
        """A place at or before ``at`` where ``text`` can be cut in two and each half
        redacted alone: outside every span something would be redacted in, after a line
        break where one is in the second half, else next to a character no token holds;
        where the second half has none (one run of token characters), at ``at`` or the
        start of what would be redacted there. 0: nowhere."""
        at = min(at, len(text))
        low = at // 2
        spans = [(s, e) for s, e in self.spans(text) if e > low and s < at]

        def safe(i: int) -> bool:
            return not any(s < i < e for s, e in spans)

        newline = text.rfind("\n", low, at)
        while newline >= 0 and not safe(newline + 1):
            newline = text.rfind("\n", low, newline)
        if newline >= 0:
            return newline + 1
        for m in reversed(list(NOT_TOKEN.finditer(text, low, at))):
            for i in (m.end(), m.start()):  # just after it, just before it
                if low < i <= at and safe(i):
                    return i
        i = at
        while not safe(i):
            i = min(s for s, e in spans if s < i < e)
        return i

    @staticmethod
    def _pair(match: re.Match[str]) -> str:
        name = match["name"].lstrip("-")
        if (
            not is_secret_name(name)
            or match["value"].startswith(REDACTED)
            or SOURCE_FILE.search(name)  # ``secrets.py:113``, ``tokens.py:Factory``
        ):
            return match[0]
        return f"{match['name']}{match['sep']}{REDACTED}"

    def document(self, value: object) -> object:
        """A decoded JSON document with every string in it (keys included) redacted,
        digests and fingerprints (long hexadecimal strings) left as they are."""
        if isinstance(value, str):
            return value if HEX.fullmatch(value) else self.text(value)
        if isinstance(value, list):
            return [self.document(v) for v in value]
        if isinstance(value, dict):
            return {self.document(k): self.document(v) for k, v in value.items()}
        return value

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self.text(text)

    def argv(self, args: Sequence[str]) -> tuple[str, ...]:
        """A command line with the value of every secret-named flag masked (``--token X``
        and ``--token=X``), and every argument redacted as text."""
        masked = {
            "value": lambda a: REDACTED,
            "flag=": lambda a: f"{a.partition('=')[0]}={REDACTED}",
            "flag": lambda a: a,
            "plain": self.text,
        }
        return tuple(masked[kind](arg) for arg, kind in _walk(args))

    def knowing(self, values: Iterable[str]) -> Redactor:
        """This redactor, also knowing ``values`` as secret (e.g. the values a command
        line's secret-named flags carried, which its program may print)."""
        other = copy.copy(self)
        known = {*self.values, *(v for v in values if len(v) >= MIN_VALUE)}
        other.values = sorted(known, key=len, reverse=True)
        return other

    def environment(self, environ: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
        """The named variables, each value redacted (a secret-named or marked one whole)."""
        return {
            name: REDACTED
            if is_secret_name(name) or name in self.marked
            else self.text(environ[name])
            for name in sorted(set(names))
            if name in environ
        }

    def file(self, path: Path, *, limit: int = LOG_LIMIT) -> tuple[int, int]:
        """Redact a worker's log in place, cut to ``limit`` bytes (``logfile.redact_file``);
        returns (bytes the file had, bytes of it left out)."""
        return redact_file(path, self.text, limit=limit)


def _hidden(text: str, hidden: bytearray) -> str:
    """``text`` with each run of hidden characters one ``REDACTED``, the line breaks
    inside a run kept (the lines stay lines)."""
    out, i = [], 0
    while i < len(text):
        if not hidden[i]:
            out.append(text[i])
            i += 1
            continue
        while i < len(text) and (hidden[i] or text[i] in "\r\n"):
            if text[i] in "\r\n":
                out.append(text[i])
            elif not out or out[-1] != REDACTED:
                out.append(REDACTED)
            i += 1
    return "".join(out)


_CACHED: tuple[tuple[tuple[str, str], ...], Redactor] | None = None


def redactor() -> Redactor:
    """The process's redactor, built from its environment (again when that changed, so a
    variable set after the first use is known too)."""
    global _CACHED
    snapshot = (*sorted(os.environ.items()), ("", str(len(_REMEMBERED))))
    if _CACHED is None or _CACHED[0] != snapshot:
        _CACHED = (snapshot, Redactor())
    return _CACHED[1]


def redact(text: str) -> str:
    return redactor().text(text)


def strip_userinfo(url: str) -> str:
    """``url`` without its user name and password (``https://user:token@host/x`` is
    ``https://host/x``); anything else unchanged."""
    return USERINFO.sub(lambda m: m["scheme"], url.strip(), count=1)


def url(text: str) -> str:
    """A URL to record: no user name or password, and no credential-looking part."""
    return redact(strip_userinfo(text))
