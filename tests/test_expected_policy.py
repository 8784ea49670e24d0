"""The expected-error run follows the target's autocast policy (issue 56), end to end.

Ground truth: ``tests/fixtures/gpt_faults.py`` scores centred log-probabilities, an output
CUDA's autocast lists compute in fp32 and the CPU's in bf16 with several times the error.
The target is ``parityfake+bf16`` (CUDA's lists registered with ATen's own macros, the
CPU's kernels underneath); the expected-error run must then be ``cpu+bf16+autocast=cuda``:
a clean target gives exactly its error and passes, and noise in one MLP of about four
times bf16's own error fails, where the CPU's own lists would have let it pass (their
error, measured here by a ``cpu+bf16`` target, puts the bound above the fault)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity import api
from parity.model.quality import ReferenceCheck
from parity.model.verdict import Verdict
from parity.request import CompareRequest
from tests.conftest import FIXTURES, HAVE_FAKEDEVICE, needs_fakedevice

if HAVE_FAKEDEVICE:
    from parity.testing import fakedevice  # noqa: F401  (loaded before any backward pass)

pytestmark = [pytest.mark.slow, needs_fakedevice]

FAULTS = FIXTURES / "gpt_faults.py"
GATES = ("eval_logits against fp64", "first forward scores against fp64")


def compare(tmp: Path, workload: str, target: str, cache: Path) -> Verdict:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARITY_PLUGINS", "parity.testing.fakedevice")
        mp.setenv("PARITY_CACHE_DIR", str(cache))
        request = CompareRequest.from_kwargs(
            workload=f"{FAULTS}:{workload}",
            baseline="cpu",
            target=target,
            steps=6,
            repeats=1,
            compliance=False,
            report=False,
            out=str(tmp),
        )
        return api.compare(request).verdict


def gate(v: Verdict, name: str) -> ReferenceCheck:
    assert v.quality is not None
    found = next(c for c in v.quality.checks if c.name == name)
    assert isinstance(found, ReferenceCheck)
    return found


def test_a_fault_four_times_bf16s_error_fails_where_the_cpu_lists_would_pass_it(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    clean = compare(tmp_path / "clean", "Clean", "parityfake+bf16", cache)
    expected = tmp_path / "clean" / "expected" / "manifest.json"
    assert '"spec": "cpu+bf16+autocast=cuda"' in expected.read_text()
    assert clean.passed, clean.gates
    for name in GATES:  # the reproduction is exact: the clean target's own error
        g = gate(clean, name)
        assert g.rmse_target == pytest.approx(g.rmse_expected, rel=1e-12)

    noisy = compare(tmp_path / "noisy", "Noisy", "parityfake+bf16", cache)
    assert not noisy.passed and "quality" in [g.name for g in noisy.gates if not g.passed]
    cpu_lists = compare(tmp_path / "cpu", "Clean", "cpu+bf16", cache)
    for name in GATES:
        faulty, own, cpu = gate(noisy, name), gate(clean, name), gate(cpu_lists, name)
        assert not faulty.passed and faulty.rule == "neither"
        assert faulty.rmse_target is not None and own.rmse_target is not None
        assert 3.0 < faulty.rmse_target / own.rmse_target < 6.0  # several times bf16's own
        # the CPU's lists' own error would have put the bound above the fault
        assert cpu.rmse_target is not None and faulty.tolerance is not None
        assert faulty.rmse_target < 3 * cpu.rmse_target + faulty.tolerance / 10
