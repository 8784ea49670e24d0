"""What looks like a credential: the names of variables, flags and keys that hold one,
and the formats of tokens, signed URLs, headers and key blocks (``parity.safety.redact``
applies them; a log's cuts (``logfile``) and a stream's (``stream``) respect them)."""

from __future__ import annotations

import re

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
TOKENS = re.compile("|".join(f"(?:{p})" for p in [*_PATTERNS, *_GLUED]))
#: characters a token is made of: a log is never cut between two of them
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~%")
NOT_TOKEN = re.compile(r"[^A-Za-z0-9_\-+/=.~%]")
#: a known value is looked for across line breaks from this length on
SPLIT_MIN = 8
KEY_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
KEY_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY-----")
#: ``scheme://user:password@host``: the password goes
#: (up to the next ``@``, as SQLAlchemy reads it: ``/``, ``#`` and ``?`` may be in it unencoded)
URL_PASSWORD = re.compile(
    r"(?P<head>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^/\s:@]*:)(?P<pw>[^\s@]+)(?=@)"
)
#: a URL's query parameter (its value a secret when its name looks secret)
QUERY_PAIR = re.compile(r"[?&;](?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63})=(?P<value>[^&#\s\"'<>]+)")
#: an HTTP ``Authorization`` (or ``Proxy-Authorization``) header's value, whatever its scheme
AUTH = re.compile(
    r"(?P<head>\b(?i:(?:proxy-)?authori[sz]ation)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?i:basic|bearer|digest|token|negotiate|ntlm|hawk|oauth|aws4-hmac-sha256)\s+)?)"
    r"(?P<value>[^\s\"',;]+)"
)
#: a signed URL's signature and credential query parameters (S3, GCS, Azure SAS), and
#: tokens and keys passed in a query string
QUERY = re.compile(
    r"(?P<head>[?&;](?i:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|"
    r"x-goog-signature|x-goog-credential|awsaccesskeyid|googleaccessid|access_token|id_token|"
    r"refresh_token|token|key|api_key|apikey|code|client_secret|password|pwd|auth)=)"
    r"(?P<value>[^&#\s\"'<>]+)"
)
#: ``scheme://TOKEN@host``: a user name as long as a token is one
URL_TOKEN = re.compile(
    r"(?P<head>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,31}://)(?P<user>[^/\s:@<>]{16,})(?=@)"
)
#: ``name=value``, ``name: value``, ``--name=value``, ``"name": "value"`` with a secret name
#: (names are at most 64 characters and start after a non-name character, so that a long
#: run of name characters costs linear time, not quadratic)
PAIR = re.compile(
    r"(?P<name>(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_.-]{0,63})(?P<sep>\"?\s*[=:]\s*\"?)(?P<value>[^\s\"',;&]+)"
)
#: ``--name value`` with a secret name inside text (an ``XLA_FLAGS``-style option string,
#: a command line a workload prints): the value goes
FLAG = re.compile(
    r"(?P<name>(?<![\w-])--?[A-Za-z][A-Za-z0-9_.-]*)(?P<sep>[ \t]+)(?P<value>[^\s\"'-][^\s\"']*)"
)
MIN_VALUE = 4
#: a file name before ``:LINE`` or ``:FACTORY`` is not a secret name, whatever its words
SOURCE_FILE = re.compile(r"\.(?:py|pyi|json|toml|ya?ml|cfg|ini|txt|log|sh|ipynb)$", re.I)
#: a digest or a fingerprint: never a secret, and a known value must not be found inside one
HEX = re.compile(r"(?:sha256:)?[0-9a-f]{16,}(?:-[0-9a-f]{6,})*")
#: ``scheme://userinfo@``: everything up to the last ``@`` before the host ends
USERINFO = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#]*@")

#: literal parts one of the token formats must contain (``TOKENS``)
_TOKEN_HINTS = ("AKIA", "ASIA", "_", "sk-", "xox", "AIza", "eyJ", "-----")


class Could:
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


def is_secret_name(name: str) -> bool:
    if name.upper() in NOT_SECRET:
        return False
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name.upper()) if p]
    return any(p in SECRET_WORDS or p.endswith(SECRET_ENDINGS) for p in parts)
