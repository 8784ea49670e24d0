"""Agreement gates: generated tokens with the baseline's margins, top-1 of logits over
decisive rows (not decided below the count that tells the threshold from chance), cosine
of embeddings, and every position of every prompt."""

from __future__ import annotations

import math

import pytest
import torch

from parity.judge.agreement import (
    EVERY_FORCED,
    EVERY_SKETCH,
    EVERY_TOKENS,
    EVERY_TOP1,
    cosine_check,
    every_position_checks,
    required_rows,
    tokens_check,
    top1_check,
)
from parity.model.inputs import Minimums
from parity.report import words
from parity.sketch import sketch

TOKENS = torch.arange(24).view(3, 8)
MIN = Minimums(top1=0.99, cosine=0.99)
MARGINS = torch.full((3, 8), 2.0)


def flipped(row: int, at: int) -> torch.Tensor:
    out = TOKENS.clone()
    out[row, at:] += 100  # greedy decoding: after a flip the rest differs too
    return out


def test_equal_tokens_pass() -> None:
    check = tokens_check("tokens", TOKENS, TOKENS.clone(), MARGINS, 0.1)
    assert check.passed and check.agreement == 1.0 and check.first_difference == (None,) * 3
    assert (check.prompts, check.new_tokens, check.compared, check.not_compared) == (3, 8, 24, 0)


def test_a_flip_on_a_near_tie_is_no_fault_and_later_tokens_are_not_counted() -> None:
    tie = MARGINS.clone()
    tie[1, 5] = 0.01  # the baseline's own margin where the target flips
    check = tokens_check("tokens", TOKENS, flipped(1, 5), tie, 0.1)
    assert check.passed and check.near_ties == 1
    assert check.first_difference == (None, 5, None) and check.margins is not None
    assert check.margins[1] == pytest.approx(0.01)
    # prompt 1 is compared up to and including its flip: 8 + 6 + 8 tokens, one differs
    assert (check.compared, check.not_compared) == (22, 2)
    assert check.agreement == pytest.approx(21 / 22)
    assert check.divergences is not None and len(check.divergences) == 1
    d = check.divergences[0]
    assert (d.prompt, d.position, d.near_tie) == (1, 5, True)


def test_a_flip_on_a_clear_baseline_margin_fails() -> None:
    check = tokens_check("tokens", TOKENS, flipped(2, 1), MARGINS, 0.1)
    assert check.passed is False and check.near_ties == 0
    assert "at least" in (words.detail(check) or "") and check.margins == (None, None, 2.0)


def test_tokens_without_margins_are_reported_not_gated() -> None:
    check = tokens_check("tokens", TOKENS, flipped(0, 0), None, 0.1)
    assert not check.gated and check.passed is None and check.first_difference[0] == 0


def test_required_rows_is_where_clopper_pearson_excludes_the_threshold() -> None:
    for p in (0.9, 0.95, 0.99, 0.999):
        n = required_rows(p)
        assert 0.05 ** (1 / n) > p >= 0.05 ** (1 / (n - 1))
    assert required_rows(0.99) == 299 and required_rows(0.95) == 59
    assert required_rows(1.0) == 1 and math.isfinite(required_rows(0.5))


def test_top1_with_too_few_decisive_rows_is_not_decided() -> None:
    base = torch.tensor([[3.0, 1.0, 0.0], [1.0, 0.99, 0.0], [0.0, 0.0, 5.0], [2.0, 0.0, 0.0]])
    check = top1_check("logits", base, base.clone(), threshold=0.05, minimum=0.99)
    assert check.gated and check.passed is None and check.decided is False
    assert (check.decisive, check.required, check.near_ties) == (3, 299, 1)
    assert "not decided" in (words.detail(check) or "")
    zero = top1_check("logits", base, base.clone(), threshold=100.0, minimum=0.99)
    assert zero.passed is None and zero.decisive == 0 and zero.value is None


def test_top1_fails_before_the_required_rows_when_flips_bound_it_under_the_minimum() -> None:
    """A pass needs 299 decisive rows at 99%; a failure is decided as soon as the flips
    put the 95% upper bound on the agreement under 99%, and not before."""
    gen = torch.Generator().manual_seed(1)
    base = torch.randn(100, 10, generator=gen) * 3
    order = base.topk(2, dim=-1).values
    clear = float((order[:, 0] - order[:, 1]).min()) - 1e-6  # every row decisive
    one = base.clone()
    one[0] = -one[0]  # 99 of 100 agree: could still be a 99% model
    check = top1_check("logits", base, one, threshold=clear, minimum=0.99)
    assert check.decided is False and check.passed is None and check.decisive == 100
    many = base.clone()
    many[:10] = -many[:10]  # 90 of 100: the 95% upper bound is 94.5%, under 99%
    check = top1_check("logits", base, many, threshold=clear, minimum=0.99)
    assert check.decided and check.passed is False and check.value == pytest.approx(0.9)
    assert "10 of 100 decisive rows flip" in (words.detail(check) or "")
    assert check.required == 299


def test_top1_excuses_near_ties_and_fails_decisive_flips() -> None:
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(400, 10, generator=gen) * 3
    top2 = base.topk(2, dim=-1).values
    margin = top2[:, 0] - top2[:, 1]
    tie = int(margin.argmin())
    flip = base.clone()
    flip[tie] = flip[tie].flip(0)  # a near-tie row ranks otherwise: excused
    threshold = float(margin[tie]) + 1e-6
    ok = top1_check("logits", base, flip, threshold=threshold, minimum=0.99)
    assert ok.passed and ok.decided and ok.value == 1.0 and ok.decisive == 399
    bad_rows = [int(i) for i in margin.argsort(descending=True)[:5]]
    flip[bad_rows] = -flip[bad_rows]  # five decisive rows' arg-max moves: 98.7% < 99%
    bad = top1_check("logits", base, flip, threshold=threshold, minimum=0.99)
    assert bad.passed is False and bad.value == pytest.approx(394 / 399)


@pytest.mark.parametrize("threshold", [0.0, 0.5, 3.0])
def test_a_row_is_decisive_by_the_gap_between_its_two_largest_logits(threshold: float) -> None:
    """As read from the arrays a bundle holds (numpy, no torch): ties (gap 0), a NaN (never
    decisive), a row of one finite logit (gap inf), against each row's two largest taken
    one by one."""
    gen = torch.Generator().manual_seed(4)
    base = (torch.randn(60, 7, generator=gen, dtype=torch.float64) * 2).numpy()
    base[0, 2] = base[0, 5] = base[0].max() + 1.0  # a tie at the top
    base[1, 3] = float("nan")
    base[2] = -float("inf")
    base[2, 4] = 0.0
    gaps = []
    for row in base.tolist():
        if any(math.isnan(x) for x in row):
            gaps.append(math.nan)
            continue
        first, second = sorted(row, reverse=True)[:2]
        gaps.append(first - second)
    want = sum(g > threshold for g in gaps)  # NaN > t is False
    check = top1_check("logits", base, base.copy(), threshold=threshold, minimum=0.5)
    assert check.decisive == want and check.rows == 60
    assert check.near_ties == 60 - want


def test_cosine_gates_the_worst_row() -> None:
    base = torch.randn(5, 16, generator=torch.Generator().manual_seed(0))
    close = base + 1e-3 * torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    assert cosine_check("embeddings", base, close, 0.99).passed
    one_bad = close.clone()
    one_bad[3] = -one_bad[3]
    check = cosine_check("embeddings", base, one_bad, 0.99)
    assert not check.passed and check.value is not None and check.value < 0 and check.rows == 5


def _every(prompts: int, prompt_len: int, new: int, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    width = prompt_len - 1 + new
    return {
        EVERY_TOKENS: torch.randint(0, 50, (prompts, new), generator=gen),
        EVERY_TOP1: torch.randint(0, 50, (prompts, width), generator=gen),
    }


def test_every_position_counts_rows_with_one_context_only() -> None:
    base = _every(40, 6, 4, 0)  # 40 prompts x (5 prompt + 4 generated positions) = 360 rows
    margins = {EVERY_TOKENS: torch.full((40, 4), 3.0), EVERY_TOP1: torch.full((40, 9), 3.0)}
    target = {k: v.clone() for k, v in base.items()}
    tokens, top1 = every_position_checks(base, target, margins, {}, 0.5, MIN)
    assert tokens.passed and tokens.compared == 160 and tokens.not_compared == 0
    assert top1.passed and top1.decided and (top1.rows, top1.decisive) == (360, 360)
    # prompt 7 flips at its generated token 1 on a near-tie: its top-1 rows after it
    # (positions 5 + 1 + 1 = 7 on) see another context: not compared
    margins[EVERY_TOKENS][7, 1] = 0.1
    target[EVERY_TOKENS][7, 1:] += 1
    target[EVERY_TOP1][7, 6:] += 1
    tokens, top1 = every_position_checks(base, target, margins, {}, 0.5, MIN)
    assert tokens.passed and tokens.compared == 158 and tokens.not_compared == 2
    assert (top1.rows, top1.not_compared) == (358, 2)
    assert top1.value == pytest.approx(357 / 358) and top1.passed  # within 99%
    # the same flip on a near-tie row of the baseline's teacher-forced pass: excused
    margins[EVERY_TOP1][7, 6] = 0.1
    _, top1 = every_position_checks(base, target, margins, {}, 0.5, MIN)
    assert top1.value == 1.0 and top1.decisive == 357 and top1.near_ties == 1
    # four more prompts' prefill rows disagree on clear margins: 353 / 357 < 99%
    target[EVERY_TOP1][:4, 0] += 1
    _, top1 = every_position_checks(base, target, margins, {}, 0.5, MIN)
    assert top1.passed is False and top1.value == pytest.approx(353 / 357)


def test_every_position_with_flat_logits_is_not_decided() -> None:
    base = _every(4, 8, 4, 1)
    flat = {EVERY_TOKENS: torch.zeros(4, 4), EVERY_TOP1: torch.zeros(4, 11)}
    _, top1 = every_position_checks(base, dict(base), flat, {}, 0.5, MIN)
    assert top1.gated and top1.passed is None and top1.decisive == 0 and top1.rows == 44


def test_cosine_at_every_position_reads_the_sketches_over_one_context_only() -> None:
    gen = torch.Generator().manual_seed(3)
    base = _every(8, 6, 4, 2)  # 8 prompts x 9 positions
    logits = torch.randn(8, 9, 2000, generator=gen)
    near = logits + 1e-3 * torch.randn(8, 9, 2000, generator=gen)
    margins = {EVERY_TOKENS: torch.full((8, 4), 3.0), EVERY_TOP1: torch.full((8, 9), 3.0)}
    target = {k: v.clone() for k, v in base.items()}
    _, _, cos = every_position_checks(
        base, target, margins | {EVERY_SKETCH: sketch(logits)},
        {EVERY_SKETCH: sketch(near)}, 0.5, MIN,
    )  # fmt: skip
    assert cos.metric == "cosine" and cos.passed and cos.rows == 72
    assert cos.value is not None and 0.999 < cos.value <= 1
    # a wrong row at a prompt position fails the gate
    wrong = near.clone()
    wrong[2, 1] = -wrong[2, 1]
    _, _, cos = every_position_checks(
        base, target, margins | {EVERY_SKETCH: sketch(logits)},
        {EVERY_SKETCH: sketch(wrong)}, 0.5, MIN,
    )  # fmt: skip
    assert cos.passed is False and cos.value is not None and cos.value < 0
    # the same row after the prompt's first flip sees another context: not compared
    wrong = near.clone()
    wrong[2, 7] = -wrong[2, 7]
    margins[EVERY_TOKENS][2, 1] = 0.1
    target[EVERY_TOKENS][2, 1:] += 1
    _, _, cos = every_position_checks(
        base, target, margins | {EVERY_SKETCH: sketch(logits)},
        {EVERY_SKETCH: sketch(wrong)}, 0.5, MIN,
    )  # fmt: skip
    assert cos.passed and (cos.rows, cos.not_compared) == (70, 2)
    # without sketches on one side there is no cosine check
    assert len(every_position_checks(base, target, margins, {}, 0.5, MIN)) == 2


def test_with_the_targets_scores_on_the_baselines_tokens_every_token_is_compared() -> None:
    base = _every(40, 6, 4, 0)  # 5 prompt positions, then 4 generated ones
    base[EVERY_TOP1][:, 5:] = base[EVERY_TOKENS]  # greedy: the arg-max is the token
    margins = {EVERY_TOKENS: torch.full((40, 4), 3.0), EVERY_TOP1: torch.full((40, 9), 3.0)}
    target = {k: v.clone() for k, v in base.items()}
    forced = base[EVERY_TOP1].clone()  # the target on the baseline's context agrees
    # prompt 7 flips at its token 1 on a near-tie; free-running, its later tokens differ
    margins[EVERY_TOKENS][7, 1] = 0.1
    target[EVERY_TOKENS][7, 1:] += 1
    target[EVERY_TOP1][7, 6:] += 1
    forced[7, 6] += 1  # the flip itself, teacher-forced as well
    tokens, top1 = every_position_checks(base, target, margins, {EVERY_FORCED: forced}, 0.5, MIN)
    # every token compared: the two after the flip as predicted on the baseline's tokens
    assert (tokens.compared, tokens.not_compared, tokens.teacher_forced) == (160, 0, 2)
    assert tokens.passed and tokens.agreement == pytest.approx(159 / 160)
    assert tokens.divergences is not None and len(tokens.divergences) == 1
    assert (top1.rows, top1.not_compared) == (360, 0)
    # a later token that differs on a clear margin, on the baseline's context: a fault
    forced[7, 8] += 1
    tokens, top1 = every_position_checks(base, target, margins, {EVERY_FORCED: forced}, 0.5, MIN)
    assert tokens.passed is False and tokens.agreement == pytest.approx(158 / 160)
    assert tokens.divergences is not None
    assert [(d.prompt, d.position, d.near_tie) for d in tokens.divergences] == [
        (7, 1, True),
        (7, 3, False),
    ]
    # without the forced scores the same later token would not have been compared
    tokens, _ = every_position_checks(base, target, margins, {}, 0.5, MIN)
    assert tokens.passed and tokens.not_compared == 2 and tokens.teacher_forced is None
