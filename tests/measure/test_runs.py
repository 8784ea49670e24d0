"""A comparison's rounds as ``measure.runs`` makes their jobs, with real workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors.torch import load_file

from parity import api
from parity.model.quality import AgreementCheck, TokensCheck
from parity.request import CompareRequest


@pytest.mark.slow
def test_the_target_s_generation_is_teacher_forced_on_the_baseline_s_tokens(
    tmp_path: Path,
) -> None:
    """The target's quality run is handed the baseline's generated tokens and scores them:
    bf16 decodes differently from fp32 somewhere, and every position after a prompt's first
    difference is still compared, on the baseline's context."""
    request = CompareRequest.from_kwargs(
        workload="gpt-generate",
        steps=1,
        seq_len=8,
        batch_size=2,
        baseline="cpu",
        target="cpu+bf16",
        repeats=1,
        compliance=False,
        report=False,
        out=str(tmp_path),
    )
    verdict = api.compare(request).verdict
    assert verdict.quality is not None
    found = {c.name: c for c in verdict.quality.checks}
    tokens, top1 = found["tokens every_tokens"], found["top-1 every position"]
    assert isinstance(tokens, TokensCheck) and isinstance(top1, AgreementCheck)
    assert tokens.not_compared == 0 and top1.not_compared == 0
    # the sides' tokens differ, and the positions after a first difference were forced
    assert tokens.teacher_forced is not None and tokens.teacher_forced > 0
    job = json.loads((tmp_path / "target" / "r00" / "job.json").read_text())
    baseline = load_file(tmp_path / "baseline" / "r00" / "numerics.safetensors")
    assert job["plan"]["forced"] == baseline["every_tokens"].tolist()
    assert "margin.every_forced" in load_file(tmp_path / "target" / "r00" / "numerics.safetensors")
