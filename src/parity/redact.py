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
  blocks, ``Bearer`` tokens, passwords in URLs (``scheme://user:password@host``) and
  ``name=value`` or ``--name value`` pairs whose name looks secret, also inside option
  strings such as ``XLA_FLAGS``;
- a command line keeps its shape: the value of a flag whose name looks secret is masked;
- a URL that is recorded (where a package was installed from) loses its user name and
  password altogether (``url``): ``https://user:token@host/repo`` is ``https://host/repo``.

The replacement is ``<redacted>``. The rule is deliberately broad: a redacted harmless
value costs nothing, a leaked token costs a rotation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

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
#: the shell's working directories: paths, not passwords (redacting them would blank every
#: path under the current directory)
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
    r"\b[Bb](?i:earer)\s+[A-Za-z0-9._~+/=-]{8,}",
]
_TOKENS = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))
#: ``scheme://user:password@host``: the password goes
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:)(?P<pw>[^/\s@]+)(?=@)")
#: ``name=value``, ``name: value``, ``--name=value``, ``"name": "value"`` with a secret name
_PAIR = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>\"?\s*[=:]\s*\"?)(?P<value>[^\s\"',;&]+)"
)
_MIN_VALUE = 4
#: ``scheme://userinfo@``: everything up to the last ``@`` before the host ends
_USERINFO = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#]*@")


def _is_secret_name(name: str) -> bool:
    if name.upper() in NOT_SECRET:
        return False
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name.upper()) if p]
    return any(p in SECRET_WORDS or p.endswith(SECRET_ENDINGS) for p in parts)


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
        # longest first, so that a value containing another is replaced whole
        self.values = sorted(values, key=len, reverse=True)
        self.marked = marked

    def text(self, text: str) -> str:
        """``text`` with every secret value and credential-looking part replaced."""
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        text = _TOKENS.sub(REDACTED, text)
        text = _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED, text)
        return _PAIR.sub(self._pair, text)

    @staticmethod
    def _pair(match: re.Match[str]) -> str:
        if not _is_secret_name(match["name"]) or match["value"] == REDACTED:
            return match[0]
        return f"{match['name']}{match['sep']}{REDACTED}"

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self.text(text)

    def argv(self, args: Sequence[str]) -> tuple[str, ...]:
        """A command line with the value of every secret-named flag masked (``--token X``
        and ``--token=X``), and every argument redacted as text."""
        out: list[str] = []
        mask_next = False
        for arg in args:
            if mask_next:
                out.append(REDACTED)
                mask_next = False
                continue
            name, eq, _ = arg.partition("=")
            if arg.startswith("-") and _is_secret_name(name.lstrip("-")):
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(arg)
                    mask_next = True
                continue
            out.append(self.text(arg))
        return tuple(out)

    def environment(self, environ: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
        """The named variables, each value redacted (a secret-named or marked one whole)."""
        return {
            name: REDACTED
            if _is_secret_name(name) or name in self.marked
            else self.text(environ[name])
            for name in sorted(set(names))
            if name in environ
        }

    def file(self, path: Path) -> None:
        """Redact a text file in place (a worker's log), through a temporary file."""
        if not path.is_file() or path.is_symlink():
            return
        tmp = path.with_name(f".{path.name}.redact")
        with (
            path.open("r", encoding="utf-8", errors="replace") as src,
            tmp.open("w", encoding="utf-8") as dst,
        ):
            for line in src:
                dst.write(self.text(line))
        os.replace(tmp, path)


@cache
def redactor() -> Redactor:
    """The process's redactor, built once from its environment."""
    return Redactor()


def redact(text: str) -> str:
    return redactor().text(text)


def strip_userinfo(url: str) -> str:
    """``url`` without its user name and password (``https://user:token@host/x`` is
    ``https://host/x``); anything else unchanged."""
    return _USERINFO.sub(lambda m: m["scheme"], url.strip(), count=1)


def url(text: str) -> str:
    """A URL to record: no user name or password, and no credential-looking part."""
    return redact(strip_userinfo(text))
