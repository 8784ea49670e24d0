"""Agreement gates: generated tokens with their margins, top-1 of logits, cosine of
embeddings."""

from __future__ import annotations

import pytest
import torch

from parity.judge.agreement import cosine_check, tokens_check, top1_check

TOKENS = torch.arange(24).view(3, 8)
MARGINS = torch.full((3, 8), 2.0)


def flipped(row: int, at: int) -> torch.Tensor:
    out = TOKENS.clone()
    out[row, at:] += 100  # greedy decoding: after a flip the rest differs too
    return out


def test_equal_tokens_pass() -> None:
    check = tokens_check("tokens", TOKENS, TOKENS.clone(), (MARGINS, MARGINS), 0.1)
    assert check.passed and check.agreement == 1.0 and check.first_difference == (None,) * 3


def test_a_flip_on_a_near_tie_is_no_fault() -> None:
    tie = MARGINS.clone()
    tie[1, 5] = 0.01
    check = tokens_check("tokens", TOKENS, flipped(1, 5), (MARGINS, tie), 0.1)
    assert check.passed and check.near_ties == 1
    assert check.first_difference == (None, 5, None) and check.margins is not None
    assert check.margins[1] == pytest.approx(0.01)
    assert check.agreement == 1 - 3 / 24


def test_a_flip_on_a_clear_margin_fails() -> None:
    check = tokens_check("tokens", TOKENS, flipped(2, 1), (MARGINS, MARGINS), 0.1)
    assert check.passed is False and check.near_ties == 0
    assert "exceeds" in (check.detail or "") and check.margins == (None, None, 2.0)


def test_tokens_without_margins_are_reported_not_gated() -> None:
    check = tokens_check("tokens", TOKENS, flipped(0, 0), None, 0.1)
    assert not check.gated and check.passed is None and check.first_difference[0] == 0


def test_top1_excuses_near_ties_and_fails_decisive_flips() -> None:
    base = torch.tensor([[3.0, 1.0, 0.0], [1.0, 0.99, 0.0], [0.0, 0.0, 5.0], [2.0, 0.0, 0.0]])
    tie_flip = base.clone()
    tie_flip[1] = torch.tensor([0.99, 1.0, 0.0])  # a near-tie flips
    ok = top1_check("logits", base, tie_flip, threshold=0.05, minimum=0.99)
    assert ok.passed and ok.value == 1.0 and ok.near_ties == 1 and ok.agreement == 0.75
    clear_flip = tie_flip.clone()
    clear_flip[0] = torch.tensor([1.0, 3.0, 0.0])
    bad = top1_check("logits", base, clear_flip, threshold=0.05, minimum=0.99)
    assert not bad.passed and bad.value == 2 / 3


def test_cosine_gates_the_worst_row() -> None:
    base = torch.randn(5, 16, generator=torch.Generator().manual_seed(0))
    close = base + 1e-3 * torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    assert cosine_check("embeddings", base, close, 0.99).passed
    one_bad = close.clone()
    one_bad[3] = -one_bad[3]
    check = cosine_check("embeddings", base, one_bad, 0.99)
    assert not check.passed and check.value is not None and check.value < 0 and check.rows == 5
