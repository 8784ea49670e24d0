"""The import graph of ``src/parity``: no circle between files, and no import against the
layering (eager, lazy inside a function, or for type checking only: all count)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: the flow, bottom up: what each layer must never import (DESIGN.md's picture). A request
#: is built (``request``), measured (``measure``, on ``runner`` workers with ``probes`` on
#: ``devices``), judged (``judge``), then written and shown (``sinks``, ``report``,
#: ``store``); ``api`` and ``cli`` sit on top, ``testing`` beside them.
_TOP = ("parity.api", "parity.cli", "parity.sinks", "parity.testing")
_JUDGED = ("parity.judge", "parity.report", "parity.store", *_TOP)
FORBIDDEN = {
    "parity.stats": ("parity.",),
    "parity.model": (
        "parity.runner",
        "parity.measure",
        "parity.request",
        "parity.probes",
        "parity.devices",
        "parity.workloads",
        "parity.cluster",
        *_JUDGED,
    ),
    "parity.devices": (
        "parity.probes",
        "parity.runner",
        "parity.measure",
        "parity.request",
        "parity.workloads",
        *_JUDGED,
    ),
    "parity.probes": (
        "parity.bundle",
        "parity.runner",
        "parity.measure",
        "parity.request",
        *_JUDGED,
    ),
    "parity.workloads": ("parity.runner", "parity.measure", "parity.request", *_JUDGED),
    "parity.runner": ("parity.measure", "parity.request", *_JUDGED),
    "parity.request": ("parity.runner", "parity.measure", *_JUDGED),
    # the scheduler never judges: it returns a measured comparison, the API concludes it
    "parity.measure": _JUDGED,
    "parity.judge": (
        "parity.runner",
        "parity.measure",
        "parity.request",
        "parity.devices",
        "parity.workloads",
        "parity.report",
        "parity.store",
        *_TOP,
    ),
    "parity.report": ("parity.runner", "parity.measure", *_TOP),
    "parity.store": ("parity.runner", "parity.measure", *_TOP),
    # sides on cluster nodes run jobs; they never judge, index or report
    "parity.cluster": ("parity.measure", *_JUDGED),
    # bundles at URLs: a leaf beside the bundle layer
    "parity.storage": ("parity.runner", "parity.measure", *_JUDGED),
    # what parity never writes or leaves behind: below everything that writes
    "parity.safety": (
        "parity.runner",
        "parity.measure",
        "parity.request",
        "parity.probes",
        "parity.devices",
        "parity.cluster",
        "parity.serving",
        *_JUDGED,
    ),
    # serving measures an endpoint; it never judges, indexes or reports
    "parity.serving": ("parity.measure", *_JUDGED),
}


def modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of the package that ``name`` imports anywhere in its file."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    out.add(full)
                elif base in known:
                    out.add(base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_circle_between_files() -> None:
    assert circles(graph()) == []


def test_the_circle_finder_finds_a_planted_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_against_the_layering() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        for layer, banned in FORBIDDEN.items()
        if name == layer or name.startswith(layer + ".")
        for target in targets
        if any(target.startswith(b) and not target.startswith(layer) for b in banned)
    ]
    assert wrong == []
