"""The user's source line: the innermost stack frame outside torch, the standard library
and parity's machinery (parity's built-in workloads count as user code)."""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
import sysconfig
from types import FrameType

import torch

from parity.model.ops import SourceLine
from parity.safety.redact import redact

Source = SourceLine


def _internal_roots() -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """Package roots that are always internal, stdlib roots, and parity's workloads."""
    import parity.version

    parity_dir = os.path.dirname(os.path.abspath(parity.version.__file__)) + os.sep
    packages = [os.path.dirname(os.path.abspath(torch.__file__)) + os.sep, parity_dir]
    functorch = sys.modules.get("functorch")
    if functorch is not None and getattr(functorch, "__file__", None):
        packages.append(os.path.dirname(os.path.abspath(str(functorch.__file__))) + os.sep)
    stdlib = tuple(
        os.path.abspath(p) + os.sep
        for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")}
        if p
    )
    return tuple(packages), stdlib, os.path.join(parity_dir, "workloads") + os.sep


_ROOTS: tuple[tuple[str, ...], tuple[str, ...], str] | None = None
_USER_CACHE: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    """Whether a frame in this file is the user's (not torch, stdlib or parity's machinery)."""
    cached = _USER_CACHE.get(filename)
    if cached is not None:
        return cached
    global _ROOTS
    if _ROOTS is None:
        _ROOTS = _internal_roots()
    packages, stdlib, workloads = _ROOTS
    path = os.path.abspath(filename)
    if filename.startswith("<"):
        user = False
    elif path.startswith(workloads):
        user = True
    elif path.startswith(packages):
        user = False
    elif path.startswith(stdlib):
        # site-packages may live under the standard library's directory
        user = "site-packages" in path or "dist-packages" in path
    else:
        user = True
    _USER_CACHE[filename] = user
    return user


def _source(filename: str, line: int, function: str, code: str | None = None) -> Source:
    if code is None:
        code = linecache.getline(filename, line).strip() or None
    if code is not None:  # the user's own line of code may hold a credential
        code = redact(code)
    return SourceLine(file=filename, line=line, function=function, code=code)


def user_frame(frame: FrameType | None = None) -> Source | None:
    """The innermost user frame of the current stack (or from ``frame`` outwards)."""
    f: FrameType | None = frame if frame is not None else sys._getframe(1)
    while f is not None:
        if is_user_file(f.f_code.co_filename):
            return _source(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


_TB_LINE = re.compile(
    r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)\n?(?P<code>.*)'
)


def user_frame_from_traceback(lines: list[str]) -> Source | None:
    """The innermost user frame of a ``traceback.format_stack()`` list (outermost first)."""
    for entry in reversed(lines):
        m = _TB_LINE.search(entry)
        if m and is_user_file(m["file"]):
            code = m["code"].strip().splitlines()[0] if m["code"].strip() else None
            return _source(m["file"], int(m["line"]), m["fn"].strip(), code)
    return None


def where(source: Source | None) -> str:
    """``file:line`` with the file relative to the working directory where shorter."""
    if source is None:
        return "unknown"
    return where_line(source.file, source.line)


def where_line(file: str, line: int) -> str:
    """``file:line`` with the file relative to the working directory where shorter."""
    path = file
    with contextlib.suppress(ValueError):
        rel = os.path.relpath(path)
        if len(rel) < len(path):
            path = rel
    return f"{path}:{line}"
