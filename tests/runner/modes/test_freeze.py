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
from parity.measure.prepare import prepare_workload
from parity.model.spec import WorkloadSpec
from parity.request import CompareRequest
from parity.runner.launch import Launcher
from parity.workloads import registered
from parity.workloads.frozen import read_frozen
from parity.workloads.names import BUILTIN_KINDS, BUILTIN_TAKE_DATA

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
