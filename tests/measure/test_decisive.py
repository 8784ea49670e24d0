"""The sides' quality runs sized for the top-1 gate before they run
(``parity.measure.decisive``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.measure import decisive
from parity.model.estimate import DecisiveRows, StepCost


def _cost(share: float, follow: bool = True, batches: int = 5) -> StepCost:
    rows = DecisiveRows(rows_per_batch=62, batches=batches, share=share, follow_steps=follow)
    return StepCost(
        step_s=1.0, load_s=0.0, dtype_ratio={}, method="", finish_steps=10.0, decisive=rows
    )


def test_a_checkpoint_s_default_steps_are_raised_to_give_the_rows_its_gate_needs() -> None:
    """The 135M checkpoint's case: 5 steps of 2 prompts, 62 positions a batch, 55% of
    them decisive: 170 rows where the gate needs 299. The steps that give 1.25x of them
    run instead, and the run's end (every prompt decoded again) is costed for them."""
    cost = _cost(0.545)
    assert decisive.foreseen(cost.decisive) == 168  # type: ignore[arg-type]
    sized = decisive.sized_steps(cost, 5, 299)
    assert sized == 12  # 299 x 1.25 / (62 x 0.545) = 11.06, rounded up
    assert decisive.foreseen(cost.decisive, sized) >= 299 * decisive.MARGIN  # type: ignore[arg-type]
    again = decisive.rescaled(cost, 5, sized)
    assert again.finish_steps == pytest.approx(24.0) and again.decisive is not None
    assert again.decisive.batches == 12
    said = decisive.sized_note(cost, 5, sized, 299)
    assert "needs 299 decisive rows" in said and "running 12 steps" in said


def test_steps_are_left_as_they_are_where_they_decide_or_cannot_be_sized() -> None:
    # 425 foreseen: the rows and their margin (5 steps' 303 are sized up: 1.25x is 374)
    assert decisive.sized_steps(_cost(0.98, batches=7), 7, 299) is None
    assert decisive.sized_steps(_cost(0.98), 5, 299) == 7
    assert decisive.sized_steps(_cost(0.5, follow=False), 5, 299) is None  # rows fixed
    assert decisive.sized_steps(_cost(0.0), 5, 299) is None  # nothing decisive
    assert decisive.sized_steps(_cost(0.05), 5, 299) is None  # 121 steps: over 8x
    assert decisive.sized_steps(None, 5, 299) is None


def test_a_gate_foreseen_short_is_said_before_measuring_with_what_decides_it() -> None:
    line = decisive.short(_cost(0.545), 5, 299)
    assert line is not None and "foreseen 168 decisive rows" in line
    assert "NOT DECIDED (exit code 3)" in line and line.endswith("about --steps 12 decides it")
    fixed = decisive.short(_cost(0.2, follow=False, batches=16), 16, 299)
    assert fixed is not None and fixed.endswith("about 31 batches of prompts would decide it")
    flat = decisive.short(_cost(0.0), 5, 299)
    assert flat is not None and flat.endswith("no position was decisive on the first prompts")
    assert decisive.short(_cost(0.98), 5, 299) is None


@pytest.mark.slow
def test_a_checkpoint_at_its_default_steps_runs_the_steps_its_top1_gate_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generation checkpoint whose default steps give too few decisive rows, run
    without --steps: the steps are raised before the sides run, the request stored
    asks for them, and the top-1 gate decides; with --steps given, they stay."""
    from parity import api
    from parity.model.quality import AgreementCheck
    from parity.request import CompareRequest
    from tests.fixtures.checkpoints import tiny_gpt2

    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    path = tiny_gpt2(tmp_path / "hf")
    options = dict(
        workload=f"hf:{path}", task="generate", baseline="cpu", target="cpu+bf16",
        batch_size=1, seq_len=8, repeats=1, compliance=False, report=False,
    )  # fmt: skip
    # 5 steps of one prompt: 5 x (7 + 16) = 115 positions, under the 299 the gate needs
    result = api.compare(CompareRequest.from_kwargs(**options, out=str(tmp_path / "o")))
    v = result.verdict
    steps = v.workload.description.steps
    assert steps is not None and steps > 5
    top1 = next(c for c in v.quality.checks if c.name == "top-1 every position")  # type: ignore[union-attr]
    assert isinstance(top1, AgreementCheck) and top1.decided and top1.passed, top1
    assert top1.decisive is not None and top1.decisive >= 299
    stored = CompareRequest.from_file(tmp_path / "o")
    assert stored.workload is not None and stored.workload.steps == steps
    assert v.exit_code == 0
