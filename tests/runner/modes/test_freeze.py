"""``freeze``: a workload resolved and frozen in a worker, so that the parent never runs
a user's code; a file that exits or raises when imported, or a factory that raises, is
one ``WorkloadError`` line and nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from parity import api
from parity.cache import cache_root
from parity.errors import WorkloadError
from parity.model.spec import WorkloadSpec
from parity.request import CompareRequest
from parity.runner.launch import Launcher
from parity.runner.prepare import prepare_workload
from parity.workloads import registered
from parity.workloads.frozen import read_frozen
from parity.workloads.names import BUILTIN_KINDS, BUILTIN_TAKE_DATA
from tests.conftest import run_cli

BAD_FILES = {
    "exit0.py": "import os\nos._exit(0)\n",
    "exit3.py": "import sys\nsys.exit(3)\n",
    "raises.py": "raise ImportError('no module named secret_sauce')\n",
    "factory.py": "def make(spec):\n    raise RuntimeError('the factory broke')\n",
}


def test_the_built_in_kinds_known_without_torch_are_the_classes_own() -> None:
    assert {name: cls.kind for name, cls in registered().items() if name in BUILTIN_KINDS} == (
        BUILTIN_KINDS
    )
    takes = {name for name, cls in registered().items() if name in BUILTIN_KINDS and cls.takes_data}
    assert takes == BUILTIN_TAKE_DATA


MINE = """
from typing import ClassVar
from parity.workloads.mlp import MlpTrain

class Mine(MlpTrain):
    name: ClassVar[str] = "mine-train"
"""


@pytest.mark.slow
def test_a_user_workload_is_prepared_in_a_worker_never_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "mine_workload.py").write_text(MINE)
    spec = WorkloadSpec(name=f"{tmp_path / 'mine_workload.py'}:Mine", steps=3)
    with Launcher() as launcher:
        described = prepare_workload(spec, launcher=launcher, freeze=False)
        frozen = prepare_workload(spec, launcher=launcher)
    assert described.frozen is None and described.kind == "train" and described.steps == 3
    assert frozen.frozen is not None and frozen.name == "mine-train"
    assert read_frozen(Path(frozen.frozen)).fingerprint == frozen.fingerprint
    assert not any(m.startswith("parity_user_mine_workload") for m in sys.modules)
    assert sorted(p.name for p in cache_root().iterdir()) == ["frozen"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("file", "words"),
    [
        ("exit0.py", "the worker exited without finishing its bundle (phase 'resolve')"),
        ("exit3.py", "called sys.exit(3) when imported"),
        ("raises.py", "failed to import: ImportError: no module named secret_sauce"),
        ("factory.py", "failed to make its workload: RuntimeError: the factory broke"),
    ],
)
def test_a_user_file_that_exits_or_raises_is_one_workload_error_line(
    tmp_path: Path, file: str, words: str
) -> None:
    path = tmp_path / file
    path.write_text(BAD_FILES[file])
    out = tmp_path / "out"
    options = dict(workload=f"{path}:make", repeats=1, compliance=False, out=str(out))
    with pytest.raises(WorkloadError) as refused:
        api.compare(CompareRequest.from_kwargs(**options))
    assert words in str(refused.value) and "\n" not in str(refused.value)
    assert not out.exists()


@pytest.mark.parametrize(
    ("sides", "threads"),
    [
        (("cpu+threads=1", "cpu+bf16+threads=1"), 1),
        (("cpu+threads=1", "cpu+bf16"), None),  # they differ: torch's default
        (("cuda+threads=1", "cpu+threads=3"), 3),  # the host side's
        (("cpu", "cpu+bf16"), None),
    ],
)
def test_the_estimate_s_steps_run_the_threads_the_host_sides_ask(
    sides: tuple[str, str], threads: int | None
) -> None:
    import torch

    from parity.model.job import PreparePlan
    from parity.model.spec import parse_side
    from parity.runner.modes.freeze import _threads

    before = torch.get_num_threads()
    plan = PreparePlan(sides=tuple(parse_side(s) for s in sides))
    with _threads(plan):
        assert torch.get_num_threads() == (threads or before)
    assert torch.get_num_threads() == before


BROKEN = """
from parity.workloads.base import RunContext, StepRunner
from parity.workloads.mlp import MlpTrain


class _Runner(StepRunner):
    def __init__(self, inner: StepRunner) -> None:
        self.inner = inner

    def step(self, i: int) -> None:
        self.inner.step(i)
        helper(i)

    def finish(self):
        return self.inner.finish()


def helper(i: int) -> None:
    total = i + undefined_name  # the user's bug


class Broken(MlpTrain):
    name = "broken"

    def make_runner(self, model, data, ctx: RunContext) -> StepRunner:
        return _Runner(super().make_runner(model, data, ctx))
"""


@pytest.mark.slow
def test_a_bug_in_the_workload_s_step_is_the_user_s_error_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    out = tmp_path / "out"
    result = run_cli(
        "compare",
        f"{tmp_path / 'broken.py'}:Broken",
        "--baseline",
        "cpu",
        "--target",
        "cpu+bf16",
        "--steps",
        "2",
        "--out",
        str(out),
        env={"PARITY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 2, result.stderr
    err = result.stderr.strip()
    assert "fails on its own, before any side ran" in err
    line = BROKEN.splitlines().index("    total = i + undefined_name  # the user's bug") + 1
    assert "NameError" in err and f"broken.py:{line}" in err and "undefined_name" in err
    assert "target" not in err.split("raised")[0]  # nothing blamed on a side
    assert not out.exists()  # nothing written, no FAIL indexed
