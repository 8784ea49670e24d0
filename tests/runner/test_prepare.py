"""The pre-flight's refusals are kept for the process: a side refused once is refused
again at once, without a worker, in the same words; another side, or the same side asked
with other plugins, goes to a worker as before (slow: the first refusal starts one)."""

from __future__ import annotations

import pytest

from parity.errors import DeviceError
from parity.model.spec import WorkloadSpec, parse_side
from parity.plugins import ENV_VAR
from parity.runner.launch import Launcher
from parity.runner.prepare import preflight, prepare_workload, refused_before

pytestmark = pytest.mark.slow


def _started(launcher: Launcher) -> bool:
    return launcher.zygote is not None or launcher.pending is not None


def test_a_side_refused_once_is_refused_again_without_a_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_VAR, "")
    missing, fine = parse_side("cpu:99"), parse_side("cpu")
    with Launcher() as first, pytest.raises(DeviceError, match="side cpu:99 cannot run") as one:
        preflight([fine, missing], launcher=first)
    assert refused_before([fine]) is None  # only the side the worker named is kept
    known = refused_before([fine, missing])
    assert known is not None and str(known) == str(one.value)
    with Launcher() as second:
        with pytest.raises(DeviceError) as two:
            preflight([missing], launcher=second)
        assert not _started(second) and str(two.value) == str(one.value)
        # a command that prepares its workload with the side checks it the same way
        with pytest.raises(DeviceError) as three:
            prepare_workload(WorkloadSpec(name="mlp-train"), launcher=second, sides=[missing])
        assert not _started(second) and str(three.value) == str(one.value)


def test_the_same_side_with_other_plugins_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = parse_side("cpu:98")
    monkeypatch.setenv(ENV_VAR, "")
    with Launcher() as launcher, pytest.raises(DeviceError):
        preflight([missing], launcher=launcher)
    assert refused_before([missing]) is not None
    monkeypatch.setenv(ENV_VAR, "json")  # any importable module: another process's world
    assert refused_before([missing]) is None
    with Launcher() as launcher:
        with pytest.raises(DeviceError, match="side cpu:98 cannot run"):
            preflight([missing], launcher=launcher)
        assert _started(launcher)
