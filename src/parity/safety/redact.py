"""One redactor for everything parity writes or prints that came from outside.

Workload output and exceptions, stderr tails and failure reasons, script command lines and
environment variables can all carry credentials. Before any of it reaches a bundle, the
verdict, a report, the index or the terminal, it passes through ``Redactor``:

- values it knows are secret are replaced wherever they appear: the value of every
  environment variable whose name looks like a credential (``*_TOKEN``, ``*_KEY``,
  ``*_SECRET``, ``*_PASSWORD``, ``*_PWD``, ``*_PASS``, ``*_BEARER``, ``*_AUTH``, ``*DSN``...)
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

A worker's stdout and stderr pass through ``StreamRedactor`` on their way to the
bundle's logs (``runner.logs``), so even the hidden temporary bundle of a killed run holds
them redacted. The replacement is ``<redacted>``. The rule is deliberately broad: a
redacted harmless value costs nothing, a leaked token costs a rotation.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

REDACTED = "<redacted>"
ENV_VAR = "PARITY_REDACT"
#: words of variable, flag and key names that hold credentials (``AWS_SECRET_ACCESS_KEY``,
#: ``--api-token``, ``db.password``), and endings of compound words (``APIKEY``, ``PGPASSWORD``)
SECRET_WORDS = frozenset(
    {
        "KEY",
        "KEYS",
        "SECRET",
        "SECRETS",
        "TOKEN",
        "TOKENS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PWD",
        "PASS",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "BEARER",
        "SESSION",
        "COOKIE",
        "PRIVATE",
        "SIGNATURE",
        "CERT",
        "DSN",
        "CONNSTR",
    }
)
SECRET_ENDINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "CREDENTIALS")
#: names that look secret and are not: the shell's working directories
NOT_SECRET = frozenset({"PWD", "OLDPWD"})
#: credential formats, anywhere in text
_PATTERNS = [
    r"\b(?:AKIA|ASIA)[0-9A-Z]{12,}",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bhf_[A-Za-z0-9]{20,}",
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
    r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"\bAIza[0-9A-Za-z_-]{30,}",
    r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    # the end of a key block whose beginning was cut off (the tail of a log)
    r"\A(?:(?!-----BEGIN)[\s\S])*?-----END [A-Z ]*PRIVATE KEY-----",
    r"\b[Bb](?i:earer)\s+[A-Za-z0-9._~+/=-]{8,}",
    # HTTP Basic credentials: base64 with a digit, ``+``, ``/`` or ``=`` in it
    r"\b[Bb]asic\s+(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}",
]
#: the same formats glued to the text before them (``authhf_...``, ``keyAKIA...``): a
#: prefix inside a word counts only where what follows looks random (a digit, and for the
#: mixed-case formats an upper and a lower case letter), so that ``disk-usage-report``
#: stays as it is
_GLUED = [
    r"(?<=[A-Za-z0-9_])(?:AKIA|ASIA)(?=[0-9A-Z]*[0-9])[0-9A-Z]{12,}",
    r"(?<=[A-Za-z0-9_])(?:gh[pousr]_|github_pat_|hf_|sk-(?:proj-|ant-)?|[sr]k_(?:live|test)_|"
    r"xox[abposr]-|AIza)(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])"
    r"[A-Za-z0-9_-]{16,}",
]
_TOKENS = re.compile("|".join(f"(?:{p})" for p in [*_PATTERNS, *_GLUED]))
#: characters a token is made of: a log is never cut between two of them
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~%")
_NOT_TOKEN = re.compile(r"[^A-Za-z0-9_\-+/=.~%]")
#: a known value is looked for across line breaks from this length on
_SPLIT_MIN = 8
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
_KEY_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY-----")
#: ``scheme://user:password@host``: the password goes
#: (up to the next ``@``, as SQLAlchemy reads it: ``/``, ``#`` and ``?`` may be in it unencoded)
_URL_PASSWORD = re.compile(
    r"(?P<head>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^/\s:@]*:)(?P<pw>[^\s@]+)(?=@)"
)
#: a URL's query parameter (its value a secret when its name looks secret)
_QUERY_PAIR = re.compile(r"[?&;](?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63})=(?P<value>[^&#\s\"'<>]+)")
#: an HTTP ``Authorization`` (or ``Proxy-Authorization``) header's value, whatever its scheme
_AUTH = re.compile(
    r"(?P<head>\b(?i:(?:proxy-)?authori[sz]ation)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?i:basic|bearer|digest|token|negotiate|ntlm|hawk|oauth|aws4-hmac-sha256)\s+)?)"
    r"(?P<value>[^\s\"',;]+)"
)
#: a signed URL's signature and credential query parameters (S3, GCS, Azure SAS), and
#: tokens and keys passed in a query string
_QUERY = re.compile(
    r"(?P<head>[?&;](?i:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|"
    r"x-goog-signature|x-goog-credential|awsaccesskeyid|googleaccessid|access_token|id_token|"
    r"refresh_token|token|key|api_key|apikey|code|client_secret|password|pwd|auth)=)"
    r"(?P<value>[^&#\s\"'<>]+)"
)
#: ``scheme://TOKEN@host``: a user name as long as a token is one
_URL_TOKEN = re.compile(
    r"(?P<head>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,31}://)(?P<user>[^/\s:@<>]{16,})(?=@)"
)
#: ``name=value``, ``name: value``, ``--name=value``, ``"name": "value"`` with a secret name
#: (names are at most 64 characters and start after a non-name character, so that a long
#: run of name characters costs linear time, not quadratic)
_PAIR = re.compile(
    r"(?P<name>(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_.-]{0,63})(?P<sep>\"?\s*[=:]\s*\"?)(?P<value>[^\s\"',;&]+)"
)
#: ``--name value`` with a secret name inside text (an ``XLA_FLAGS``-style option string,
#: a command line a workload prints): the value goes
_FLAG = re.compile(
    r"(?P<name>(?<![\w-])--?[A-Za-z][A-Za-z0-9_.-]*)(?P<sep>[ \t]+)(?P<value>[^\s\"'-][^\s\"']*)"
)
_MIN_VALUE = 4
#: a file name before ``:LINE`` or ``:FACTORY`` is not a secret name, whatever its words
_SOURCE_FILE = re.compile(r"\.(?:py|pyi|json|toml|ya?ml|cfg|ini|txt|log|sh|ipynb)$", re.I)
#: a digest or a fingerprint: never a secret, and a known value must not be found inside one
_HEX = re.compile(r"(?:sha256:)?[0-9a-f]{16,}(?:-[0-9a-f]{6,})*")
#: ``scheme://userinfo@``: everything up to the last ``@`` before the host ends
_USERINFO = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#]*@")
#: a log longer than this keeps its first ``LOG_HEAD`` and last bytes, ``LOG_LIMIT`` in
#: all, in a bundle (the start says what ran, the end how it ended)
LOG_LIMIT = 8 << 20
LOG_HEAD = 1 << 20


#: literal parts one of the token formats must contain (``_TOKENS``)
_TOKEN_HINTS = ("AKIA", "ASIA", "_", "sk-", "xox", "AIza", "eyJ", "-----")


class _Could:
    """Which rules can match ``text`` at all, found with plain substring searches (a
    rule's regular expression costs far more than they do on a log's bulk, where almost
    no rule matches)."""

    def __init__(self, text: str) -> None:
        lower = text.lower()
        self.token = any(h in text for h in _TOKEN_HINTS) or "bearer" in lower or "basic" in lower
        self.auth = "authori" in lower
        self.query = "=" in text and ("?" in text or "&" in text or ";" in text)
        self.url = "://" in text
        upper = text.upper()
        self.named = any(w in upper for w in SECRET_WORDS)


def url_secrets(text: str) -> list[str]:
    """The passwords and secret query values of the URLs in ``text`` (as written and
    percent-decoded: a driver may print either)."""
    from urllib.parse import unquote

    found = [m["pw"] for m in _URL_PASSWORD.finditer(text)]
    found += [m["value"] for m in _QUERY.finditer(text)]
    found += [m["value"] for m in _QUERY_PAIR.finditer(text) if _is_secret_name(m["name"])]
    found += [unquote(v) for v in found]
    return [v for v in dict.fromkeys(found) if len(v) >= _MIN_VALUE and REDACTED not in v]


#: secret values this process learned from a URL it was given (``remember``)
_REMEMBERED: set[str] = set()


def remember(values: Iterable[str]) -> None:
    """Know ``values`` as secret from now on, in every redactor of this process (a
    database password read from ``--store``)."""
    _REMEMBERED.update(v for v in values if len(v) >= _MIN_VALUE)


def _is_secret_name(name: str) -> bool:
    if name.upper() in NOT_SECRET:
        return False
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name.upper()) if p]
    return any(p in SECRET_WORDS or p.endswith(SECRET_ENDINGS) for p in parts)


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
        if arg.startswith("-") and _is_secret_name(name.lstrip("-")):
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
        found += [m[0] for m in _TOKENS.finditer(arg)]
        for pattern, group in ((_AUTH, "value"), (_QUERY, "value"), (_URL_TOKEN, "user")):
            found += [m[group] for m in pattern.finditer(arg)]
        found += [m["pw"] for m in _URL_PASSWORD.finditer(arg)]
    return [v for v in dict.fromkeys(found) if not v.startswith(REDACTED)]


class Redactor:
    """Redacts known secret values and credential-looking text."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        marked = {n.strip() for n in env.get(ENV_VAR, "").split(",") if n.strip()}
        values = {
            value
            for name, value in env.items()
            if (name in marked or _is_secret_name(name)) and len(value) >= _MIN_VALUE
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
        may = _Could(text)
        if may.token:
            text = _TOKENS.sub(REDACTED, text)
        if may.auth:
            text = _AUTH.sub(_masked, text)
        if may.query:
            text = _QUERY.sub(_masked, text)
        if may.url:
            text = _URL_TOKEN.sub(lambda m: m["head"] + REDACTED, text)
            text = _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED, text)
        if may.named:
            text = _FLAG.sub(self._pair, text)
            text = _PAIR.sub(self._pair, text)
        return text

    def _across_lines(self, text: str) -> str:
        """Known values and token formats that appear in ``text`` only with line breaks
        inside them: each piece on each line replaced."""
        inner = text.rstrip("\r\n")
        if "\n" not in inner and "\r" not in inner:  # one line: nothing split
            return text
        flat = text.replace("\r", "").replace("\n", "")
        if not any(len(v) >= _SPLIT_MIN and v in flat for v in self.values) and not (
            _Could(flat).token and _TOKENS.search(flat)
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
            for m in _TOKENS.finditer(joined):
                hide(pair, *m.span())
        if not any(hidden):
            return text
        out, i = [], 0
        while i < len(text):
            if hidden[i]:
                while i < len(text) and (hidden[i] or text[i] in "\r\n"):
                    if text[i] in "\r\n":
                        out.append(text[i])
                    elif not out or out[-1] != REDACTED:
                        out.append(REDACTED)
                    i += 1
                continue
            out.append(text[i])
            i += 1
        return "".join(out)

    def _known(self, text: str) -> Iterator[tuple[int, int]]:
        """Where the known values long enough to be looked for split are in ``text``."""
        for value in self.values:
            if len(value) < _SPLIT_MIN:
                continue
            at = text.find(value)
            while at >= 0:
                yield at, at + len(value)
                at = text.find(value, at + 1)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where in ``text`` something would be redacted (over-wide: whole matches), so that
        a cut made there would leave its halves unrecognised on both sides."""
        found = list(self._known(text))
        may = _Could(text)
        for pattern, could in (
            (_TOKENS, may.token),
            (_AUTH, may.auth),
            (_QUERY, may.query),
            (_URL_TOKEN, may.url),
            (_URL_PASSWORD, may.url),
        ):
            found += [m.span() for m in pattern.finditer(text)] if could else []
        for pattern in (_FLAG, _PAIR) if may.named else ():
            found += [m.span() for m in pattern.finditer(text) if _is_secret_name(m["name"])]
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
        for m in reversed(list(_NOT_TOKEN.finditer(text, low, at))):
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
            not _is_secret_name(name)
            or match["value"].startswith(REDACTED)
            or _SOURCE_FILE.search(name)  # ``secrets.py:113``, ``tokens.py:Factory``
        ):
            return match[0]
        return f"{match['name']}{match['sep']}{REDACTED}"

    def document(self, value: object) -> object:
        """A decoded JSON document with every string in it (keys included) redacted,
        digests and fingerprints (long hexadecimal strings) left as they are."""
        if isinstance(value, str):
            return value if _HEX.fullmatch(value) else self.text(value)
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
        known = {*self.values, *(v for v in values if len(v) >= _MIN_VALUE)}
        other.values = sorted(known, key=len, reverse=True)
        return other

    def environment(self, environ: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
        """The named variables, each value redacted (a secret-named or marked one whole)."""
        return {
            name: REDACTED
            if _is_secret_name(name) or name in self.marked
            else self.text(environ[name])
            for name in sorted(set(names))
            if name in environ
        }

    def file(self, path: Path, *, limit: int = LOG_LIMIT) -> tuple[int, int]:
        """Redact a text file in place (a worker's log), through a temporary file; a file
        longer than ``limit`` bytes keeps its first ``LOG_HEAD`` (whole lines) and its
        last bytes, with a line between that says how many were left out. Returns (bytes
        the file had, bytes of it left out).

        Where the redacted copy cannot be written (the disk is full), the file is
        replaced by a one-line note, or removed: never left unredacted."""
        if not path.is_file() or path.is_symlink():
            return 0, 0
        tmp = path.with_name(f".{path.name}.redact")
        size = path.stat().st_size
        try:
            dropped = self._copy(path, tmp, limit)
            os.replace(tmp, path)
            return size, dropped
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                path.write_text(
                    f"[parity: this log was left out: it could not be redacted ({exc})]\n"
                )
            return size, size

    def _copy(self, src: Path, dst: Path, limit: int) -> int:
        """Copy ``src`` redacted, cut to its head and tail if longer than ``limit``; the
        bytes left out."""
        size = src.stat().st_size
        with (
            src.open("rb") as f,
            dst.open("w", encoding="utf-8") as out,
        ):
            if size <= limit:
                self._lines(f, out, size)
                return 0
            head = min(LOG_HEAD, limit // 2)
            # the head, a line longer than it cut (between words: never inside a token)
            ended = self._lines(f, out, head, cut=True)
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
            self._lines(f, out, size)
            return dropped

    def _lines(self, f: IO[bytes], out: IO[str], end: int, *, cut: bool = False) -> bool:
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
                in_key = not _KEY_END.search(line)
            else:
                in_key = bool(_KEY_BEGIN.search(line)) and not _KEY_END.search(line)
                out.write(self.text(line))
            if last:
                break
        return ended


#: how far a cut in a log moves to fall between words (no token is longer)
_WORD_LIMIT = 4096
_TOKEN_BYTES = frozenset(ch.encode()[0] for ch in _TOKEN_CHARS)


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
    return _USERINFO.sub(lambda m: m["scheme"], url.strip(), count=1)


def url(text: str) -> str:
    """A URL to record: no user name or password, and no credential-looking part."""
    return redact(strip_userinfo(text))


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
        if not (self.in_key or _KEY_BEGIN.search(text) or _KEY_END.search(text)):
            return self.redactor.text(text)
        out = []
        for line in text.splitlines(keepends=True):
            if self.in_key:
                self.in_key = not _KEY_END.search(line)
                continue
            self.in_key = bool(_KEY_BEGIN.search(line)) and not _KEY_END.search(line)
            out.append(self.redactor.text(line))
        return "".join(out)
