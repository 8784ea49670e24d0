"""The code of a user's workload file, as one fingerprint part (``code``).

A workload from ``path/to/file.py:factory`` is defined by more than its spec and its
seeded tensors: the file's code, the local modules it imports and the environment
variables it reads decide what a step computes. Each of them enters the ``code`` part of
the fingerprint, so every cache keyed on the fingerprint (the frozen workload, the fp64
reference, the expected-error run, the probes) misses when one of them changes, and a
mismatch between two bundles is named as the code's.

What is read: the file and every module first imported while the file is imported and
its factory runs, whose file is neither the standard library's, an installed package's,
torch's nor parity's (the user's own modules, by content), and the modules of the file's
directory that an ``import`` statement anywhere in that code names (one imported only
when a step runs, too). Environment variables: those read through
``os.environ`` (``os.getenv`` too) by that code meanwhile, and those its source names in
``os.environ[...]``, ``os.environ.get(...)`` or ``os.getenv(...)`` with a literal name,
wherever they are read (a step that reads one is keyed on it too). Their names are
recorded; their values enter the digest only, never a file.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from parity.model.workload import CodeSource

#: the calls whose first literal argument names an environment variable read
_READERS = frozenset({"get", "getenv", "pop", "setdefault", "getenvb"})


def _installed_roots() -> tuple[str, ...]:
    """Directories whose modules are not the user's: the standard library, installed
    packages, torch and parity."""
    roots = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(str(Path(__file__).resolve().parents[1]))  # parity's own package
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.add(os.path.dirname(os.path.abspath(str(torch.__file__))))
    return tuple(os.path.abspath(r) + os.sep for r in roots if r)


def is_local(file: str) -> bool:
    """Whether ``file`` is the user's own code: a ``.py`` file outside the standard library,
    installed packages, torch and parity."""
    return _is_local(file, _installed_roots())


def _is_local(file: str, roots: tuple[str, ...]) -> bool:
    path = os.path.abspath(file)
    parts = Path(path).parts
    return (
        path.endswith(".py")
        and not path.startswith(roots)
        and "site-packages" not in parts
        and "dist-packages" not in parts
    )


class _Reads:
    """Names read from ``os.environ`` while recording, with the file of the first frame
    outside the standard library's mapping code that read each."""

    def __init__(self) -> None:
        self.names: dict[str, set[str]] = {}


@contextlib.contextmanager
def recording(file: Path) -> Iterator[list[CodeSource]]:
    """Record what the workload file ``file`` reads while the block runs; the list
    yielded holds the ``CodeSource`` once the block ends."""
    before = set(sys.modules)
    reads = _Reads()
    environ_type = type(os.environ)
    original = environ_type.__getitem__

    def getitem(self: os._Environ[str], key: str) -> str:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.endswith(
            ("_collections_abc.py", "os.py")
        ):
            frame = frame.f_back  # type: ignore[assignment]
        if frame is not None and self is os.environ:
            reads.names.setdefault(key, set()).add(frame.f_code.co_filename)
        return original(self, key)

    environ_type.__getitem__ = getitem  # type: ignore[method-assign]
    found: list[CodeSource] = []
    try:
        yield found
    finally:
        environ_type.__getitem__ = original  # type: ignore[method-assign]
        found.append(_source(file, before, reads))


def _source(file: Path, before: set[str], reads: _Reads) -> CodeSource:
    roots = _installed_roots()
    files = {str(file.resolve())}
    for name in set(sys.modules) - before:
        module_file = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(module_file, str) and _is_local(module_file, roots):
            files.add(os.path.abspath(module_file))
    home = file.resolve().parent
    names: set[str] = {k for k, where in reads.names.items() if any(w in files for w in where)}
    digests: dict[str, str] = {}
    pending = sorted(files)
    while pending:
        path = pending.pop()
        shown = _shown(Path(path), home)
        if shown in digests:
            continue
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        names |= literal_reads(data)
        digests[shown] = hashlib.sha256(data).hexdigest()
        pending.extend(str(p) for p in local_imports(data, home))
    env = sorted(names)
    h = hashlib.sha256()
    for shown, digest in sorted(digests.items()):
        h.update(f"file\0{shown}\0{digest}\0".encode())
    for name in env:
        value = os.environ.get(name)
        h.update(f"env\0{name}\0{'unset' if value is None else 'set'}\0".encode())
        h.update(hashlib.sha256((value or "").encode("utf-8", "surrogateescape")).digest())
    return CodeSource(digest=h.hexdigest(), files=digests, environment=tuple(env))


def _shown(path: Path, home: Path) -> str:
    """A code file's name as recorded: relative to the workload file's directory where it
    is below it (the same code elsewhere is the same workload), else its own name."""
    try:
        return str(path.resolve().relative_to(home))
    except ValueError:
        return path.name


def local_imports(source: bytes, home: Path) -> list[Path]:
    """The files of ``home`` that the ``import`` statements of ``source`` name (absolute
    imports: a module beside the workload file, or a package's modules under it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    dotted: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            dotted += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    found: list[Path] = []
    for name in dotted:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            base = home.joinpath(*parts[:i])
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file() and candidate not in found:
                    found.append(candidate)
    return found


def literal_reads(source: bytes) -> set[str]:
    """Environment variables a module's source reads by a literal name, wherever."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                names.add(key.value)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            target = func.value if isinstance(func, ast.Attribute) else None
            reads = name in {"getenv", "getenvb"} or (
                name in _READERS and target is not None and _is_environ(target)
            )
            first = node.args[0]
            if reads and isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return names


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )
