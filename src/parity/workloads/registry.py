"""The workload registry: built-ins, plugins and ``path/to/file.py:factory`` workloads.

``register_workload(cls)`` adds a ``Workload`` subclass under its ``name``;
``resolve(spec)`` builds the workload a spec names. A user file's factory is a
``Workload`` subclass or a callable taking a ``WorkloadSpec`` and returning a
``Workload``. ``register_prefix(prefix, resolver)`` claims a family of names
``PREFIX:REST`` (``hf:gpt2``): ``resolve`` hands such a spec to the resolver.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from parity.errors import WorkloadError
from parity.model.spec import WorkloadSpec
from parity.plugins import import_file, is_file_workload, load_plugins
from parity.workloads.base import Workload
from parity.workloads.checkpoint import resolve_hf
from parity.workloads.cnn import CnnInfer
from parity.workloads.code import recording
from parity.workloads.gpt import GptGenerate, GptTrain
from parity.workloads.mlp import MlpTrain

_REGISTRY: dict[str, type[Workload]] = {}
PrefixResolver = Callable[[WorkloadSpec], Workload]
_PREFIXES: dict[str, PrefixResolver] = {}


def register_prefix(prefix: str, resolver: PrefixResolver) -> None:
    """Resolve every workload named ``PREFIX:REST`` with ``resolver(spec)``."""
    _PREFIXES[prefix] = resolver


def prefixes() -> list[str]:
    load_plugins()
    return sorted(_PREFIXES)


def register_workload(cls: type[Workload]) -> type[Workload]:
    """Register a workload class under its ``name`` (usable as a class decorator)."""
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Workload]]:
    load_plugins()
    return dict(sorted(_REGISTRY.items()))


def resolve(spec: WorkloadSpec, home: str | None = None) -> Workload:
    """Build the workload a spec names; WorkloadError names the valid choices. A user
    file's is imported from ``home`` where one is given (the directory it was sent to on
    a cluster node), else from its path."""
    if is_file_workload(spec.name):
        return _from_file(spec, home)
    table = registered()
    prefix, sep, _ = spec.name.partition(":")
    if sep and prefix in _PREFIXES:
        return _PREFIXES[prefix](spec)
    cls = table.get(spec.name)
    if cls is None:
        raise WorkloadError(
            f"unknown workload {spec.name!r}: use one of {', '.join(table)}, "
            + "".join(f"{p}:NAME, " for p in sorted(_PREFIXES))
            + "or path/to/file.py:factory"
        )
    return cls(spec)


def _from_file(spec: WorkloadSpec, home: str | None) -> Workload:
    file, _, attr = spec.name.rpartition(":")
    path = Path(file).expanduser() if home is None else Path(home) / Path(file).name
    if not path.is_file():
        raise WorkloadError(f"workload file {file} does not exist: check the path")
    with recording(path) as code:  # not its model: its code may change torch's settings,
        # which the worker reads after set-up
        workload = _built(spec, file, attr, path)
    workload.code_source = code[0]
    return workload


def _built(spec: WorkloadSpec, file: str, attr: str, path: Path) -> Workload:
    try:
        module = import_file(path.resolve())
    except SystemExit as exc:
        raise WorkloadError(
            f"workload file {file} called sys.exit({exc.code!r}) when imported: a workload "
            "file must not exit (put script code under if __name__ == '__main__':)"
        ) from None
    except Exception as exc:
        raise WorkloadError(
            f"workload file {file} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    factory = getattr(module, attr, None)
    if factory is None:
        raise WorkloadError(f"{file} has no {attr!r}: name a Workload subclass or factory in it")
    if not callable(factory):
        raise WorkloadError(
            f"{spec.name}: {attr} is a {type(factory).__name__}, not a parity Workload: name "
            "a Workload subclass or a factory taking the WorkloadSpec"
        )
    try:
        workload = factory(spec)
    except WorkloadError:
        raise
    except (Exception, SystemExit) as exc:
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise WorkloadError(f"{spec.name} failed to make its workload: {what}") from None
    if not isinstance(workload, Workload):
        raise WorkloadError(
            f"{spec.name} returned {type(workload).__name__}, not a parity Workload: "
            "subclass parity.workloads.Workload"
        )
    return workload


for _cls in (CnnInfer, GptGenerate, GptTrain, MlpTrain):
    register_workload(_cls)
register_prefix("hf", resolve_hf)  # transformers is imported only when one is resolved
