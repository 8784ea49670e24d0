"""The settings gate: a torch setting the workload changed, judged across the sides."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from parity.judge.decision import settings_gate
from parity.model.bundle import Bundle
from parity.model.manifest import TorchSettings
from parity.report import words
from tests.fixtures.bundles import manifest

SETUP = TorchSettings(
    default_dtype="torch.float32",
    num_threads=2,
    float32_matmul_precision="highest",
    deterministic_algorithms=False,
    cuda_matmul_allow_tf32=False,
    cudnn_allow_tf32=True,
    cudnn_deterministic=False,
    cudnn_benchmark=False,
)


def _bundle(role: str, spec: str, **timed: object) -> Bundle:
    from parity.probes.settings import changes

    man = manifest(role=role, spec=spec)
    assert man.resolved is not None
    during = replace(SETUP, **timed)  # type: ignore[arg-type]
    resolved = replace(man.resolved, timed=during, changed=changes(SETUP, during) or None)
    return Bundle(path=Path(role), manifest=replace(man, resolved=resolved))


def _gate(baseline: dict[str, object], target: dict[str, object]) -> tuple[bool, str]:
    gate = settings_gate(
        {
            "baseline": (_bundle("baseline", "cpu", **baseline),),
            "target": (_bundle("target", "cpu+bf16", **target),),
        }
    )
    assert gate is not None
    return gate.passed, words.gate(gate)


def test_no_change_no_gate() -> None:
    assert settings_gate({"baseline": (_bundle("baseline", "cpu"),)}) is None


def test_a_setting_both_sides_changed_alike_is_reported_not_failed() -> None:
    """nanoGPT's train.py: ``allow_tf32 = True`` and a lower float32 matmul precision."""
    same = {"cuda_matmul_allow_tf32": True, "float32_matmul_precision": "high"}
    passed, detail = _gate(same, same)
    assert passed
    assert "cuda_matmul_allow_tf32 was False at set-up" in detail
    assert detail.count("the same on both sides: reported, not failed") == 2


@pytest.mark.parametrize(
    ("baseline", "target", "fails", "said"),
    [
        # only the target computes its float32 matmuls at a lower precision: unfair
        ({}, {"float32_matmul_precision": "medium"}, True, "differs between the sides and"),
        ({"cuda_matmul_allow_tf32": True}, {}, True, "differs between the sides and"),
        # both in float64: alike, and still not the precision either side declared
        ({"default_dtype": "torch.float64"}, {"default_dtype": "torch.float64"}, True, "declared"),
        # threads change the figures, not what is computed
        ({"num_threads": 1}, {}, False, "differs between the sides: changes the figures"),
    ],
)
def test_a_difference_between_the_sides_or_an_unfair_change_fails_and_is_named(
    baseline: dict[str, object], target: dict[str, object], fails: bool, said: str
) -> None:
    passed, detail = _gate(baseline, target)
    assert passed is not fails and said in detail, detail
    assert "baseline" in detail and "target" in detail
