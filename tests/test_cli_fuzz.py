"""A fuzzer of the command line: argument lists built from the real command tree, with
values from boundary sets, against the README's promise.

The invariant: the exit code is 0, 1 or 2; stderr never holds a traceback (nor an
"internal error"); exit code 2 means exactly one line on stderr and no file made or
changed anywhere under the working directory, the output directory, the frozen-workload
cache (``PARITY_CACHE_DIR``) or the history index's directory (``PARITY_STORE``).

The API is stubbed (``tests.fixtures.cli.stub_api``): a command that passes validation
reaches a stub that refuses to run anything (exit 1), so what is fuzzed is parsing and
validation, in-process and fast. ``PARITY_FUZZ_EXAMPLES`` raises the example count (500
by default, with a fixed seed, so CI runs the same 500 every time). A handful of real
subprocess cases at the end check the same invariant through ``python -m parity``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin
from unittest import mock

import pytest
import typer
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from parity.cli.app import app
from parity.request.options import options_of
from parity.request.plan import TEMPLATE
from tests.fixtures.cli import STUB, invoke, snapshot, stub_api

EXAMPLES = int(os.environ.get("PARITY_FUZZ_EXAMPLES", "500"))
FAST_ROOT = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None

# -- boundary values --------------------------------------------------------------------------

NUMBERS = ["0", "-1", "1", "2", "3", "nan", "NaN", "inf", "-inf", "1e308", "-1e308", "1e999"]
NUMBERS += ["4097", "99999999999999999999999", "١٢", "٣", "0.5", "1,5", "0x10", "", " 1", "1.0"]
TEXT = ["", " ", "cpu", "cpu+bf16", "cuda:1", "tpu9", "cpu+nproc=0", "cpu+nproc=2", "cpu+fsdp"]
TEXT += ["cpu+threads=١", "cpu+emulate=matmul-bf16", "CPU", "mlp-train", "gpt-train", "nope"]
TEXT += ["cnn-infer", "hf:", "hf:gpt2", "w.py:Make", "w.py:1x", "missing.py:Make", "~nobody/x.py:M"]
TEXT += ["\x1b[31mred", "a\nb", "tab\there", "\u2028", "ü" * 3, "x" * 10_000, "🙂"]
TEXT += ["target=nan", "target=21.5:16", "baseline=1e308:0", "gpu=3", "target=0", "target=3:٣"]
TEXT += ["1,8,32", "0,4", "1,", ",", "1," + "9" * 40, "steps=reason", "colour=x", "seed"]
TEXT += ["n_layer=2", "=x", "30s", "1h30m", "0s", "-5m", "1e308", "median_step_s", "a,b"]
TEXT += ["[bold]markup[/bold]", ":smile:", "--", "-", "--json", "c1a2"]
PATHS = ["exists", "full", "file.txt", "nope", "nope/deeper", "plan.toml", "bad.toml", "w.py"]
PATHS += ["", ".", "..", "run", "req", "/nonexistent-parity-fuzz/x", "a" * 300, "exists/../full"]
PATHS += ["-", "~nobody/x", "x" * 5000]


@dataclass(frozen=True)
class Param:
    """One parameter of a command, as the fuzzer sees it."""

    name: str
    opts: tuple[str, ...]
    kind: str  # int | float | str | path | bool | enum
    argument: bool
    required: bool
    multiple: bool
    choices: tuple[str, ...] = ()


def _kind(param: Any) -> tuple[str, tuple[str, ...]]:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", str)
    if get_origin(annotation) is list:
        annotation = get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "enum", tuple(str(e.value) for e in annotation)
    names = {bool: "bool", int: "int", float: "float", Path: "path"}
    if annotation is str and "DIR" in str(getattr(param, "metavar", "") or ""):
        return "path", ()  # a directory or a URL (--out DIR|URL)
    return names.get(annotation, "str"), ()


def command_tree() -> list[tuple[tuple[str, ...], tuple[Param, ...]]]:
    """Every leaf command of the real app with its parameters (``--help`` left out)."""
    leaves: list[tuple[tuple[str, ...], tuple[Param, ...]]] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        commands = getattr(cmd, "commands", None)
        if commands:
            for name, sub in commands.items():
                walk(sub, (*path, name))
            return
        params = []
        for p in cmd.params:
            kind, choices = _kind(p)
            opts = (*p.opts, *getattr(p, "secondary_opts", ()))
            argument = p.param_type_name == "argument"
            params.append(Param(p.name, opts, kind, argument, p.required, p.multiple, choices))
        leaves.append((path, tuple(params)))

    walk(typer.main.get_command(app), ())
    return leaves


TREE = command_tree()


def values(param: Param) -> st.SearchStrategy[str]:
    junk = st.text(max_size=12).filter(lambda s: "\x00" not in s)
    if param.kind in ("int", "float"):
        floats = st.floats(allow_nan=True, allow_infinity=True).map(repr)
        return st.one_of(st.sampled_from(NUMBERS), st.integers(-(10**20), 10**20).map(str), floats)
    if param.kind == "path":
        return st.one_of(st.sampled_from(PATHS), junk)
    if param.kind == "enum":
        return st.one_of(st.sampled_from(param.choices), st.sampled_from(TEXT), junk)
    return st.one_of(st.sampled_from(TEXT), junk)


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """A command, some of its options with boundary values, its arguments (or not), and
    now and then a stray token or a script after ``--``."""
    path, params = draw(st.sampled_from(TREE))
    args = list(path)
    for p in params:
        wanted = p.required and draw(st.integers(0, 9)) > 0
        if p.argument:
            if wanted or draw(st.booleans()):
                args += [draw(values(p)) for _ in range(2 if p.multiple else 1)]
            continue
        if not wanted and draw(st.integers(0, 3)) > 0:
            continue
        opt = draw(st.sampled_from(p.opts))
        args += [opt] if p.kind == "bool" else [opt, draw(values(p))]
    if draw(st.integers(0, 15)) == 0:
        args.insert(draw(st.integers(0, len(args))), draw(st.sampled_from(TEXT)))
    if draw(st.integers(0, 10)) == 0:
        args += [
            "--",
            *draw(st.lists(st.sampled_from(["python", "train.py", "{device}"]), max_size=3)),
        ]
    return args


# -- the world each example runs in ----------------------------------------------------------


@contextmanager
def sandbox() -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh working directory with inputs to point at, its own cache and store."""
    root = Path(tempfile.mkdtemp(prefix="parity-fuzz-", dir=FAST_ROOT))
    work = root / "work"
    for d in ("exists", "full", "run"):
        (work / d).mkdir(parents=True)
    (work / "full" / "keep.txt").write_text("mine")
    (work / "file.txt").write_text("x")
    (work / "plan.toml").write_text(TEMPLATE.replace('name = "gpt-train"', 'name = "mlp-train"'))
    (work / "bad.toml").write_text("[workload\n")
    (work / "w.py").write_text("def Make(spec):\n    return 42\n")
    (work / "req").mkdir()
    (work / "req" / "request.json").write_text("{}")
    env = {"PARITY_CACHE_DIR": str(root / "cache"), "PARITY_STORE": str(root / "store" / "i.db")}
    old = Path.cwd()
    os.chdir(work)
    try:
        yield root, env
    finally:
        os.chdir(old)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def stubbed() -> Iterator[None]:
    mp = pytest.MonkeyPatch()
    stub_api(mp)
    import parity.devices
    import parity.probes.environment
    import parity.workloads

    # env and workloads take no input worth fuzzing: quick stand-ins for what they read
    mp.setattr(parity.probes.environment, "collect", lambda device: {"python": "3"})
    mp.setattr(parity.devices, "get_device", lambda name: name)
    mp.setattr(parity.devices, "known_device_types", lambda: {"cpu"})
    mp.setattr(parity.workloads, "registered", dict)
    yield
    mp.undo()


def check_invariant(args: list[str]) -> int:
    with sandbox() as (root, env):
        before = snapshot(root)
        result = invoke(*args, env=env)
        after = snapshot(root)
    where = f"parity {' '.join(map(repr, args))[:400]}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        where,
        result.exception,
    )
    assert result.exit_code in (0, 1, 2), (where, result.exit_code, result.stderr[-600:])
    assert "Traceback" not in result.stderr, (where, result.stderr[-2000:])
    assert "internal error" not in result.stderr, (where, result.stderr[-600:])
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (where, result.stderr[-2000:])
        assert lines[0].startswith("parity: error: "), (where, lines[0])
        assert len(lines[0]) < 3000, (where, len(lines[0]))
        assert after == before, (where, set(after) ^ set(before))
    return result.exit_code


def reached_every_outcome(counts: dict[int, int]) -> None:
    """The fuzzer must not only have produced usage errors: exit 1 is a line that passed
    validation and reached the stub, exit 0 one that needs no API (list, init, show);
    either way, validation let it through."""
    total = sum(counts.values())
    through = counts.get(0, 0) + counts.get(1, 0)
    assert counts.get(2, 0) > total // 10 and through > total // 25, counts


def fuzz(examples: int, seed_value: int) -> object:
    """The fuzz test at ``examples`` command lines (derandomized from ``seed_value``),
    then the spread of their outcomes, counted within the test itself (a separate test
    reading a module's counts depends on running on the same xdist worker)."""
    counts: dict[int, int] = {}

    @seed(seed_value)
    @settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(args=command_lines())
    def each(args: list[str]) -> None:
        code = check_invariant(args)
        counts[code] = counts.get(code, 0) + 1

    @pytest.mark.usefixtures("stubbed")
    def test() -> None:
        counts.clear()
        each()
        reached_every_outcome(counts)

    return test


#: the whole fuzz (500 command lines, ~20-50 s) runs with the slow tests; a tenth of it,
#: from another seed, in the fast suite
test_no_command_line_breaks_the_promise = pytest.mark.slow(fuzz(EXAMPLES, 20261130))
test_a_sample_of_command_lines_keeps_the_promise = fuzz(max(EXAMPLES // 10, 20), 20261201)


def test_an_outcome_spread_of_usage_errors_only_is_refused() -> None:
    reached_every_outcome({2: 40, 1: 4, 0: 1})
    with pytest.raises(AssertionError):
        reached_every_outcome({2: 50})
    with pytest.raises(AssertionError):
        reached_every_outcome({1: 50})


def test_the_tree_covers_every_command() -> None:
    names = {" ".join(path) for path, _ in TREE}
    for command in ("compare", "run", "scan", "diff", "check soak", "scale", "ls", "init"):
        assert command in names
    compare = dict(TREE)[("compare",)]
    assert {"--price", "--timeout", "--budget", "--target-loss", "--nproc"} <= {
        o for p in compare for o in p.opts
    }


# -- the Python API ----------------------------------------------------------------------------

API_NAMES = [o.key for o in options_of("compare")] + ["plan", "resume", "progress", "colour"]
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(TEXT + PATHS[:10]),
    st.lists(st.one_of(st.integers(-5, 5), st.sampled_from(TEXT[:20])), max_size=3),
    st.dictionaries(
        st.sampled_from(["target", "baseline", "steps", "idle_fraction", "gpu", ""]),
        st.one_of(st.integers(-5, 5), st.floats(), st.sampled_from(TEXT[:20])),
        max_size=3,
    ),
    st.builds(object),
    st.just(Path("exists")),
    st.just(print),
)


API_OUTCOMES: dict[str, int] = {}


@seed(20261130)
@settings(max_examples=EXAMPLES // 2, derandomize=True, deadline=None, database=None)
@given(
    function=st.sampled_from(["compare", "run"]),
    kwargs=st.dictionaries(st.sampled_from(API_NAMES), ODD_VALUES, max_size=4),
    device=ODD_VALUES,
)
def _api_call(function: str, kwargs: dict[str, Any], device: object) -> None:
    import parity
    from parity.errors import SideError, UsageError

    if function == "run":
        kwargs = {**kwargs, "device": device}
    with sandbox() as (root, env), mock.patch.dict(os.environ, env):
        before = snapshot(root)
        try:
            getattr(parity, function)(**kwargs)
        except UsageError:
            API_OUTCOMES["usage"] = API_OUTCOMES.get("usage", 0) + 1
            assert snapshot(root) == before, (kwargs, set(snapshot(root)) ^ set(before))
        except SideError as exc:  # validation passed: the stub refused to run it
            API_OUTCOMES["stub"] = API_OUTCOMES.get("stub", 0) + 1
            assert STUB in str(exc)


@pytest.mark.usefixtures("stubbed")
def test_the_python_api_raises_only_usage_errors() -> None:
    """Wrong types and values are ``UsageError`` subclasses with a one-line message,
    never ``TypeError``, ``AttributeError`` or ``ValueError``; nothing is written; and
    the fuzzer reached both outcomes (not only usage errors)."""
    API_OUTCOMES.clear()
    _api_call()
    assert API_OUTCOMES.get("usage", 0) > 50 and API_OUTCOMES.get("stub", 0) > 5, API_OUTCOMES


# -- real processes ----------------------------------------------------------------------------

REAL = [
    ["compare", "--target", "bogus"],
    ["compare", "nope"],
    ["run", "mlp-train", "--device", "cpu+nproc=0", "--out", "o"],
    ["compare", "mlp-train", "--timeout", "nan", "--out", "o"],
    ["compare", "mlp-train", "--price", "target=inf", "--out", "o"],
    ["compare", "mlp-train", "--"],
    ["compare", "--steps", "1e999"],
    ["show", "nope"],
    ["init", "/nonexistent-parity-fuzz/p.toml"],
    ["check", "soak", "cnn-infer", "--device", "cpu", "--duration", "-5m", "--out", "o"],
]


@pytest.mark.slow  # each starts the command in a fresh interpreter
@pytest.mark.parametrize("args", REAL, ids=[" ".join(a)[:40] for a in REAL])
def test_real_processes_keep_the_promise(args: list[str], tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PARITY_CACHE_DIR": str(tmp_path / "cache"),
        "PARITY_STORE": str(tmp_path / "store" / "i.db"),
    }
    work = tmp_path / "work"
    work.mkdir()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "parity", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("parity: error: "), done.stderr
    assert sorted(os.listdir(tmp_path)) == ["work"] and not os.listdir(work)
    assert time.perf_counter() - started < 60
