from __future__ import annotations

import warnings

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


def test_disabled_recorder_records_nothing() -> None:
    with RefusalRecorder(False) as rec:
        pass
    assert rec.ops == []
