"""One rule for every URL a user gives parity, read once, where it is read.

A URL parity keeps (in ``request.json``, ``verdict.json``, the index, object keys, a
report) or prints must carry nothing secret. So:

- a place parity writes to or reads bundles from (``--out``, ``--resume``, ``parity
  diff``/``report``/``reindex`` arguments, ``s3://``, ``gs://``, ``file://``...), a Ray
  cluster (``--cluster``, ``RAY_ADDRESS``) and an MLflow tracking URI (``--mlflow``,
  ``MLFLOW_TRACKING_URI``) are refused, in one line and before anything is written, when
  they carry a user name or password, a query (a signed URL's ``X-Amz-Signature``, a
  ``?token=``) or a fragment: credentials belong in the environment or a profile
  (``checked``);
- a database URL for the index (``--store``, ``$PARITY_STORE``) may carry a password, as
  SQLAlchemy and libpq take it (``postgresql://USER:PASSWORD@HOST/DB``, the password
  unencoded with ``/``, ``#`` or ``?`` in it, or ``?password=``): it is shown with every
  such value masked (``database``), and the process's redactor is told the values, so
  that no line parity prints or writes holds them (``parity.safety.redact.remember``).

What the refusal shows of the URL is its scheme, host and path: never the part refused.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from parity.errors import OptionError
from parity.safety.redact import remember, url_secrets

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_HIER = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
MASK = "***"


def scheme(text: str) -> str | None:
    """The scheme of a ``scheme://...`` URL (lower case), None for a path."""
    m = _HIER.match(text.strip())
    return m.group(1).lower() if m else None


def safe_form(text: str) -> str:
    """What can be shown of any URL: scheme, host, port and path (no user, password,
    query or fragment); a path as given."""
    raw = text.strip()
    m = _HIER.match(raw)
    if not m:
        return raw
    rest = raw[m.end() :]
    # the authority ends at the first '/', '?' or '#' after the last '@' of userinfo (a
    # password may hold '/', '#' or '?' unencoded, as SQLAlchemy reads it): drop up to it
    at = _userinfo_end(rest)
    rest = rest[at:]
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    return f"{m.group(1)}://{rest}"


def _userinfo_end(rest: str) -> int:
    """Where a URL's authority begins after ``scheme://`` (0: no userinfo)."""
    stop = len(rest)
    for ch in " \t\n":
        i = rest.find(ch)
        if i >= 0:
            stop = min(stop, i)
    at = rest.rfind("@", 0, stop)
    if at < 0:
        return 0
    # an '@' after the authority's first '/' is part of the path unless a ':' before it
    # says it ends a password (``postgresql://u:pa/ss@host``)
    slash = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=stop)
    if at > slash and ":" not in rest[:slash]:
        return 0
    return at + 1


def refusal(text: str) -> str | None:
    """What makes ``text`` unsafe to keep: ``a user or password``, ``a query``,
    ``a fragment`` (None when safe, or a path)."""
    raw = text.strip()
    if scheme(raw) is None:
        return None
    if _userinfo_end(raw[raw.index("://") + 3 :]):
        return "a user or password"
    try:
        parts = urlsplit(raw)
    except ValueError:
        return "a malformed authority"
    if parts.query or raw.split("#", 1)[0].endswith("?"):
        return "a query"
    if parts.fragment or "#" in raw:
        return "a fragment"
    return None


def checked(text: str, option: str, example: str = "s3://BUCKET/PREFIX") -> str:
    """``text`` as given when it is a path or a URL that carries nothing secret, else an
    OptionError (one line, the URL shown without the part refused)."""
    why = refusal(text)
    if why is None:
        return text.strip() if scheme(text) else text
    raise OptionError(
        f"{option} {safe_form(text)}: a URL with {why} is refused (parity keeps and prints "
        f"the URLs it is given): give it without (e.g. {example}) and any credentials in "
        "the environment or a profile"
    )


def database(text: str) -> str:
    """A database URL as it may be shown: its password and every secret-named query
    value masked (``postgresql://alice:***@db/parity?sslmode=require&password=***``); the
    values masked are remembered by the redactor."""
    raw = text.strip()
    m = _HIER.match(raw)
    if not m:
        return raw
    found = url_secrets(raw)
    remember(found)
    rest = raw[m.end() :]
    at = _userinfo_end(rest)
    user = ""
    if at:
        name, colon, _ = rest[: at - 1].partition(":")
        user = f"{name}:{MASK}@" if colon else f"{name}@"
    shown = rest[at:]
    for value in sorted(found, key=len, reverse=True):
        shown = shown.replace(value, MASK)
    return f"{m.group(1)}://{user}{shown}"
