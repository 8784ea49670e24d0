"""Package names and version pins, without a dependency: PEP 503 names and PEP 440 specifiers.

A pin is a specifier set as pip writes one: ``==2.13.0``, ``==2.13.*``, ``>=2.9,<2.14``,
``~=1.26``, ``!=1.0``, ``===weird`` (a bare version, ``2.13.0``, means ``==2.13.0``).
Versions are compared as PEP 440 orders them (epoch, release, pre-, post- and
dev-releases, local labels), with the rules of ``packaging.specifiers`` (26): ``==V`` and
the ordered comparisons ignore an installed version's local label (``2.13.0+cpu`` is
``==2.13.0``), ``<V`` does not admit a final V's pre-releases, ``>V`` not V's
post-releases. An installed pre-release is judged by its version alone (a pin describes
what is installed, not what an installer may choose). A version that is not PEP 440
(``unknown``) matches only ``===``. ``tests/test_versions.py`` checks this against
``packaging`` itself. Nothing here imports torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from parity.errors import OptionError

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_VERSION = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|a|b|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_OPERATORS = ("===", "~=", "==", "!=", "<=", ">=", "<", ">")
#: sorts below and above everything of its kind (PEP 440's negative and positive infinity)
_LOW: tuple[int, ...] = (0,)
_HIGH: tuple[int, ...] = (2,)


def normalise(name: str) -> str:
    """A distribution's name as PEP 503 compares names: ``Typing_Extensions`` is
    ``typing-extensions``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True, slots=True)
class Version:
    """A PEP 440 version, ordered as PEP 440 orders versions."""

    epoch: int
    release: tuple[int, ...]
    pre: tuple[int, int] | None
    post: int | None
    dev: int | None
    local: tuple[int | str, ...] | None

    @classmethod
    def parse(cls, text: str) -> Version | None:
        """The version, or None where ``text`` is not a PEP 440 version."""
        m = _VERSION.match(text)
        if m is None:
            return None
        pre = None
        if m["pre_l"]:
            pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0))
        post = m["post_n1"] or m["post_n2"] or ("0" if m["post_l"] else None)
        local = None
        if m["local"]:
            parts = re.split(r"[-_.]", m["local"].lower())
            local = tuple(int(p) if p.isdigit() else p for p in parts)
        return cls(
            epoch=int(m["epoch"] or 0),
            release=tuple(int(p) for p in m["release"].split(".")),
            pre=pre,
            post=None if post is None else int(post),
            dev=int(m["dev_n"] or 0) if m["dev_l"] else None,
            local=local,
        )

    @property
    def public(self) -> Version:
        return Version(self.epoch, self.release, self.pre, self.post, self.dev, None)

    @property
    def base(self) -> tuple[int, tuple[int, ...]]:
        return self.epoch, _trimmed(self.release)

    @property
    def prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None

    def key(self) -> tuple[object, ...]:
        """The sort key (``packaging.version._cmpkey``'s order)."""
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, ...] = _LOW  # 1.0.dev0 sorts before 1.0a0
        else:
            pre = _HIGH if self.pre is None else (1, *self.pre)
        post = _LOW if self.post is None else (1, self.post)
        dev = _HIGH if self.dev is None else (1, self.dev)
        local: tuple[tuple[int, int | str], ...] = ()
        if self.local is not None:  # numbers sort above words; any label above none
            local = tuple((1, p) if isinstance(p, int) else (0, p) for p in self.local)
            local = ((2, 0), *local)
        return (self.epoch, _trimmed(self.release), pre, post, dev, local)


def _trimmed(release: tuple[int, ...]) -> tuple[int, ...]:
    out = list(release)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Clause:
    """One ``OPERATOR VERSION`` of a pin."""

    operator: str
    version: str

    def __str__(self) -> str:
        return f"{self.operator}{self.version}"

    def admits(self, installed: str) -> bool:
        if self.operator == "===":
            return installed.strip().lower() == self.version.lower()
        have = Version.parse(installed)
        if have is None:
            return False
        if self.operator in ("==", "!="):
            return self._equal(have) == (self.operator == "==")
        if self.operator == "~=":
            want = _parsed(self.version)
            epoch = f"{want.epoch}!" if want.epoch else ""
            prefix = Clause("==", epoch + ".".join(map(str, want.release[:-1])) + ".*")
            return prefix.admits(installed) and Clause(">=", self.version).admits(installed)
        return self._ordered(have, _parsed(self.version))

    def _equal(self, have: Version) -> bool:
        if self.version.endswith(".*"):
            want = _parsed(self.version[:-2])
            padded = have.release + (0,) * max(0, len(want.release) - len(have.release))
            return have.epoch == want.epoch and padded[: len(want.release)] == want.release
        want = _parsed(self.version)
        return (have if want.local is not None else have.public).key() == want.key()

    def _ordered(self, have: Version, want: Version) -> bool:
        """``<``, ``>``, ``<=``, ``>=`` on the installed version's public part; ``<V`` and
        ``>V`` leave out V's own family (a final V's pre-releases, V's post-releases)."""
        a, b, op = have.public.key(), want.key(), self.operator
        if op in (">=", "<="):
            return a >= b if op == ">=" else a <= b
        if op == "<":  # below V.dev0 unless V is a pre-release itself
            floor = want if want.prerelease else replace(want, dev=0)
            return a < floor.key()
        if have.base != want.base:
            return a > b
        if want.dev is not None or want.post is not None:
            return a > b
        return a > b and have.pre != want.pre


def _parsed(text: str) -> Version:
    version = Version.parse(text)
    assert version is not None, f"{text} was checked when the pin was read"
    return version


@dataclass(frozen=True, slots=True)
class Pin:
    """An expected version of one package: every clause must admit the installed one."""

    package: str
    clauses: tuple[Clause, ...]

    @property
    def text(self) -> str:
        return ",".join(str(c) for c in self.clauses)

    def admits(self, installed: str) -> bool:
        return all(c.admits(installed) for c in self.clauses)


def parse_clause(text: str, where: str) -> Clause:
    item = text.strip()
    op = next((o for o in _OPERATORS if item.startswith(o)), "")
    version = item[len(op) :].strip()
    if not op and version[:1].isdigit():
        op = "=="  # a bare version
    if not op or not version:
        raise OptionError(
            f"{where}: {text.strip()!r} is not a version pin: write e.g. ==2.13.0, ==2.13.*, "
            ">=2.9,<2.14 or ~=1.26"
        )
    if op == "===":
        return Clause(op, version)
    wildcard = version.endswith(".*")
    if wildcard and op not in ("==", "!="):
        raise OptionError(f"{where}: {op}{version}: a .* wildcard goes only with == or !=")
    parsed = Version.parse(version[:-2] if wildcard else version)
    if parsed is None:
        raise OptionError(f"{where}: {version!r} is not a PEP 440 version, e.g. 2.13.0")
    if wildcard and parsed != Version(parsed.epoch, parsed.release, None, None, None, None):
        raise OptionError(f"{where}: {op}{version}: a .* wildcard follows release numbers only")
    if parsed.local is not None and op not in ("==", "!="):
        raise OptionError(f"{where}: {op}{version}: a local label (+...) goes only with ==")
    if op == "~=" and len(parsed.release) < 2:
        raise OptionError(f"{where}: ~={version} needs two release numbers or more, e.g. ~=1.26")
    return Clause(op, version)


def parse_pin(package: str, spec: str, where: str | None = None) -> Pin:
    """A pin of ``package`` (OptionError naming ``where`` and the fix)."""
    where = where or f"pin {package}"
    if not _NAME.match(package.strip()):
        raise OptionError(f"{where}: {package!r} is not a package name, e.g. torch or numpy")
    clauses = tuple(parse_clause(part, where) for part in spec.split(","))
    return Pin(package=normalise(package.strip()), clauses=clauses)


def split_requirement(text: str) -> tuple[str, str]:
    """``torch==2.13.0`` (or ``torch ==2.13.*``, ``numpy>=1.24,<3``) into name and pin."""
    m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", text)
    if m is None or not m[2].strip():
        raise OptionError(
            f"--pin {text!r} names no version: write NAME then a pin, e.g. torch==2.13.0 "
            "or 'numpy>=1.24,<3'"
        )
    return m[1].rstrip("._-"), m[2].strip()
