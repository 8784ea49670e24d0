"""Shared fixtures: an isolated cache for frozen workloads, and CLI helpers."""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# One intra-op thread per process unless the caller chose otherwise, set before torch
# loads (nothing this conftest or its plugins import loads it): the test workers and the
# parity workers they start share the machine's cores, and OpenMP threads spinning for a
# busy core cost several times the work itself there (a tiny t5 generation test: 33 s of
# CPU with two threads, 8 s with one, on a loaded 2-core machine). Parity's workers
# inherit it, both sides of every comparison alike.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# Compiled modules kept in __pycache__ (git ignores it) even where the environment says
# not to write them (PYTHONDONTWRITEBYTECODE, as on the machines CI runs on): otherwise
# every process the suite starts compiles parity, and every test worker its test modules
# and their assertion rewrites, from source again (7 s of a worker's collection; 0.5 s of
# each command, zygote or Ray worker that imports parity).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

FIXTURES = Path(__file__).parent / "fixtures"
#: servers that tests start themselves (the Ray cluster: tests/cluster/conftest.py), and the
#: check that a test not marked slow starts no process where slow tests are left out
pytest_plugins = ["tests.fixtures.servers", "tests.fixtures.honest"]


#: ``-n auto`` (pyproject's addopts) takes at most this many workers: the slow tests start
#: worker processes of their own, so more would only queue on the cores
MAX_XDIST_WORKERS = 4


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker leaves without the interpreter's teardown (``_leave_now``): only
    the worker itself (its config has ``workerinput``), never a pytest it starts, whose
    exit code is its own (the environment's PYTEST_XDIST_WORKER reaches those too)."""
    if hasattr(config, "workerinput"):
        # registered after pytest's and the plugins' own exit functions (logging's shutdown,
        # execnet's group clean-up), so it runs before them and stands in for the first
        atexit.register(_leave_now)


def _leave_now() -> None:
    """A test worker's end once its results are sent: streams flushed, then out, as
    ``parity.exiting.leave`` does for the command. The interpreter's teardown of
    everything a worker imported and kept (torch, transformers, matplotlib, the tests'
    objects) took 3-3.5 s after the last test on this 2-core machine, on the wall clock
    of every run."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker per core, and one more where slow tests run: they spend much of their
    time waiting on what they started (a timeout running out, a server or a Ray node
    coming up, a killed command's sleep), and a third worker on two cores kept the cores
    busy meanwhile (the whole suite 538 s against 577 s here; the fast suite, whose tests
    use the CPU themselves, 53 s against 51 s, so it keeps one per core)."""
    cores = os.cpu_count() or 1
    fast_only = "not slow" in (config.option.markexpr or "")
    return max(1, min(cores + (0 if fast_only else 1), MAX_XDIST_WORKERS))


#: the tests on the Ray cluster: its fixture is defined here (tests/cluster/conftest.py),
#: so no other test can start one, and one xdist worker takes them all (two clusters' six
#: Ray nodes on two cores made each of their tests several times slower)
RAY_TESTS = "tests/cluster/"


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A nightly test is slow too, so ``-m "not slow"`` (which replaces the default
    ``-m 'not nightly'``) never runs one."""
    for item in items:
        if item.get_closest_marker("nightly") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the tests under ``RAY_TESTS`` as one group. xdist 3.8
    groups by an ``@group`` suffix it writes to ``item._nodeid``, which pytest 9.2 no
    longer reads (``nodeid`` comes from ``item._id``): its ``xdist_group`` mark groups
    nothing there. The controller sees node ids only, hence a rule on the path."""
    from xdist.scheduler import LoadGroupScheduling

    class OneClusterWorker(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(RAY_TESTS):
                return RAY_TESTS
            return str(super()._split_scope(nodeid))

    return OneClusterWorker(config, log)


#: idle zygotes a test worker keeps (``_kept_zygotes``)
KEPT_ZYGOTES = 6


@pytest.fixture(scope="session", autouse=True)
def _kept_zygotes() -> Iterator[None]:
    """The session's in-process comparisons and runs fork from kept zygotes, as a sweep's
    cells do (``parity.runner.kept``): one ``import torch`` per preload and environment,
    not one per launcher. A test that changes the environment gets a zygote of its own
    (the environment is part of the key); each worker is still a fresh fork. A test
    worker keeps up to ``KEPT_ZYGOTES``: the session's plain environment, with the S3
    server's, with the fake device's, with ``PYTHONPATH`` and a workload's own preload
    come round again and again, and with three kept the plain one was closed and started
    again (a zygote imports torch and Dynamo: about 4.2 s of CPU here, 300 MB kept)."""
    from parity.runner.kept import keep_zygotes

    with keep_zygotes(most=KEPT_ZYGOTES):
        yield


@pytest.fixture(autouse=True)
def _working_directory_kept() -> Iterator[None]:
    """Each test leaves the working directory where it found it (``monkeypatch.chdir``
    undoes itself first: this fixture is set up before and torn down after it). Tests
    that name files relative to the repository (``examples/...``) run later in the same
    worker, so a test that moved it is failed by name here and the directory put back."""
    before = os.getcwd()
    yield
    try:
        after = os.getcwd()
    except FileNotFoundError:  # the test's directory was removed under it
        after = "a directory since removed"
    if after != before:
        os.chdir(before)
        pytest.fail(f"the test left the working directory at {after}, not {before}")


@pytest.fixture
def outside_kept_zygotes(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test of zygotes' own lifetimes: the session's block (``_kept_zygotes``) set
    aside meanwhile, its zygotes left alone."""
    from parity.runner import kept

    monkeypatch.setattr(kept, "_kept", None)


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Frozen workloads, fp64 references and cached probes go to a temporary cache that
    parity's workers inherit via the environment: one for the whole run, which the xdist
    workers share (``shared_cache``), as concurrent comparisons on one machine share the
    user's."""
    old = os.environ.get("PARITY_CACHE_DIR")
    os.environ["PARITY_CACHE_DIR"] = str(shared_cache(tmp_path_factory))
    # the history index too: tests never write to the user's own
    old_store = os.environ.get("PARITY_STORE")
    os.environ["PARITY_STORE"] = str(tmp_path_factory.mktemp("parity-store") / "index.sqlite")
    yield
    if old is None:
        os.environ.pop("PARITY_CACHE_DIR", None)
    else:
        os.environ["PARITY_CACHE_DIR"] = old
    if old_store is None:
        os.environ.pop("PARITY_STORE", None)
    else:
        os.environ["PARITY_STORE"] = old_store


def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's parity cache. Under xdist every worker's base directory (``popen-gwN``)
    lies in the run's own, and the cache is made there once for all of them: each worker
    froze the same built-in workloads, ran their fp64 references and scanned their sides
    again (22 frozen workloads, 13 references and about 20 sides' probes twice or three
    times in one run). Entries are made in hidden directories renamed into place, a
    second writer's copy dropped, and verified when read (``workloads.frozen``,
    ``runner.probecache``), as for comparisons run at once by a user; a test that edits an
    entry on purpose uses a cache of its own."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") and base.name.startswith("popen-"):
        shared = base.parent / "parity-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("parity-cache")


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the ``parity`` command line on ``args``: its exit code, stdout and stderr.

    By default in this process: ``parity.cli.main``, which the console script and
    ``python -m parity`` run after start-up (``parity.cli.entry``), with ``env`` laid
    over the environment for the call and both streams captured. The comparison's
    workers then fork from the session's kept zygotes (``_kept_zygotes``) instead of each
    command paying for an interpreter, ``import torch`` and a zygote of its own (a
    quarter of the suite's CPU time when every call was a subprocess). An exception that
    escapes ``main`` is printed and gives 1, as the interpreter would; ``timeout`` is
    then pytest-timeout's (pyproject).

    ``process=True``: the real command in a subprocess, killed after ``timeout`` s, for
    what needs a process of its own (a Ray client, concurrency, signals, exit)."""
    if process:
        return subprocess.run(
            [sys.executable, "-m", "parity", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    from parity.cli import main

    out, err = io.StringIO(), io.StringIO()
    # the command configures no logging: its warnings reach stderr through logging's last
    # resort, bare, which pytest's own handlers on the root logger would otherwise stand in for
    said = logging.StreamHandler(err)
    said.setLevel(logging.WARNING)
    said.setFormatter(logging.Formatter("%(message)s"))
    with pytest.MonkeyPatch.context() as mp:
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        logging.getLogger().addHandler(said)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # the status the interpreter would exit with
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except Exception:
                traceback.print_exc()
                code = 1
            finally:
                logging.getLogger().removeHandler(said)
    return subprocess.CompletedProcess(
        ["parity", *args], code, stdout=out.getvalue(), stderr=err.getvalue()
    )


def load_json(text: str) -> Any:
    return json.loads(text)


#: floats in golden files are compared to this relative tolerance (absolute near zero):
#: the same sums, medians and logs differ in the last bits between machines whose numpy
#: takes other SIMD paths (AVX-512 against AVX2, say); every other value compares exactly
GOLDEN_REL = 1e-9
GOLDEN_ABS = 1e-12


def differences(
    a: Any, b: Any, path: str = "", *, rel: float = 0.0, abs_: float = 0.0
) -> list[str]:
    """Paths where two JSON values differ (for readable assertion failures).

    Floats are equal within ``rel`` (relative) or ``abs_`` (absolute); exact by default.
    Everything else (strings, integers, booleans, keys, list lengths) compares exactly,
    and a float never equals an integer."""
    if type(a) is not type(b):
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict):
        return [
            d
            for k in sorted(set(a) | set(b), key=str)
            for d in differences(a.get(k), b.get(k), f"{path}.{k}", rel=rel, abs_=abs_)
        ]
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{path}[{i}]", rel=rel, abs_=abs_)
        ]
    if isinstance(a, float) and math.isclose(a, b, rel_tol=rel, abs_tol=abs_):
        return []
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def golden_differences(got: Any, want: Any) -> list[str]:
    """:func:`differences` at the golden files' tolerance."""
    return differences(got, want, rel=GOLDEN_REL, abs_=GOLDEN_ABS)


# Test modules that use the parityfake device import it when they are imported, under
# ``if HAVE_FAKEDEVICE:``, so it is loaded before the first backward pass (see
# parity.testing.fakedevice), and mark their tests ``@needs_fakedevice``.
HAVE_FAKEDEVICE = shutil.which(os.environ.get("CXX", "c++")) is not None and bool(
    shutil.which("ninja")
)
needs_fakedevice = pytest.mark.skipif(
    not HAVE_FAKEDEVICE, reason="building the parityfake device needs a C++ compiler and ninja"
)
