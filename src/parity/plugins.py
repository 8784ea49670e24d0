"""Loading third-party devices and workloads.

Two routes, both read by the parent and by every worker, so a plugin is known on both
sides of a process boundary:

- entry points in the groups ``parity.devices`` and ``parity.workloads`` (an installed
  package); the object an entry point names is imported, and importing it registers;
- the environment variable ``PARITY_PLUGINS``: a comma-separated list of importable
  module names or paths to ``.py`` files, imported in order.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from importlib.metadata import EntryPoints, entry_points
from pathlib import Path

from parity.errors import UsageError

ENV_VAR = "PARITY_PLUGINS"
#: modules a worker imports before its job, calling their ``on_worker_start(worker)``
WORKER_HOOKS_VAR = "PARITY_WORKER_HOOKS"
#: the entry point groups plugins register in
GROUPS = ("parity.devices", "parity.workloads")
_loaded: set[str] = set()


#: the entry points of each group as a zygote listed them before forking
#: (:func:`remember_entry_points`); None: read them at each call
_listed: dict[str, EntryPoints] | None = None


def remember_entry_points() -> None:
    """List the plugin groups' entry points now, for this process and its forks to use
    instead of reading every installed distribution's metadata again in each (a cost that
    grows with what is installed). A zygote calls it: what is installed does not change
    under a comparison; nothing is imported (a plugin's code runs in the workers only)."""
    global _listed
    _listed = {group: entry_points(group=group) for group in GROUPS}


def _entry_points(group: str) -> EntryPoints:
    return _listed[group] if _listed is not None else entry_points(group=group)


def load_plugins() -> None:
    """Import every plugin once; a broken plugin is a usage error naming it."""
    for group in GROUPS:
        for ep in _entry_points(group):
            key = f"ep:{ep.value}"
            if key in _loaded:
                continue
            _loaded.add(key)
            try:
                ep.load()
            except Exception as exc:  # a plugin may fail in any way; name it
                raise UsageError(
                    f"plugin {ep.name!r} ({ep.value}) from entry point group {group} failed "
                    f"to import: {exc}; fix or uninstall that package"
                ) from exc
    for item in filter(None, (s.strip() for s in os.environ.get(ENV_VAR, "").split(","))):
        if item in _loaded:
            continue
        _loaded.add(item)
        try:
            _import(item)
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(
                f"plugin {item!r} from {ENV_VAR} failed to import: {type(exc).__name__}: {exc}; "
                f"fix it or remove it from {ENV_VAR}"
            ) from exc


def _import(item: str) -> None:
    if item.endswith(".py"):
        path = Path(item).expanduser().resolve()
        if not path.is_file():
            raise UsageError(f"plugin file {item} from {ENV_VAR} does not exist")
        import_file(path)
    else:
        importlib.import_module(item)


def import_file(path: Path) -> object:
    """Import a Python file as a module under a stable name derived from its path, with
    its own directory first on ``sys.path`` while it is imported (and last afterwards)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"parity_user_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    home = str(path.parent)
    sys.path.insert(0, home)  # its own directory, for its own imports (``runner.python``)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        # behind everything else afterwards: a function importing a sibling later still
        # finds it, and a ``json.py`` next to the file shadows nothing of parity's
        sys.path.remove(home)
        sys.path.append(home)
    return module


def is_file_workload(name: str) -> bool:
    """Whether a workload name is a user file's factory, ``path/to/file.py:factory``."""
    path, sep, _ = name.rpartition(":")
    return bool(sep) and path.endswith(".py")


def run_worker_hooks(worker: object) -> None:
    """Import the modules named in ``PARITY_WORKER_HOOKS`` (comma-separated) and call each
    one's ``on_worker_start(worker)`` (``worker``: the running worker's module): how a test
    plants faults in a worker's writes without the runner knowing of them."""
    for name in filter(None, (n.strip() for n in os.environ.get(WORKER_HOOKS_VAR, "").split(","))):
        module = importlib.import_module(name)
        hook = getattr(module, "on_worker_start", None)
        if not callable(hook):
            raise UsageError(f"{WORKER_HOOKS_VAR} names {name}, which has no on_worker_start")
        hook(worker)
