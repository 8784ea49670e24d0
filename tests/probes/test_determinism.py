from __future__ import annotations

import warnings

import torch

from parity.probes.determinism import RefusalRecorder


def test_refusing_ops_are_recorded_once() -> None:
    with RefusalRecorder(True) as rec:
        for _ in range(3):
            warnings.warn(
                "kthvalue CPU does not have a deterministic implementation, but you "
                "set 'torch.use_deterministic_algorithms(True, warn_only=True)'",
                UserWarning,
                stacklevel=1,
            )
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert rec.ops == ["kthvalue CPU"]


def test_deterministic_side_turns_on_warn_only_mode() -> None:
    from parity.devices import get_device
    from parity.runner.phases import configure
    from parity.spec import parse_side

    before = torch.are_deterministic_algorithms_enabled()
    try:
        settings = configure(parse_side("cpu+deterministic"), get_device("cpu"))
        assert settings["deterministic"]
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(before)


def test_disabled_recorder_records_nothing() -> None:
    with RefusalRecorder(False) as rec:
        pass
    assert rec.ops == []
