from __future__ import annotations

import torch
import torch.nn.functional as F

from parity.probes.emulate import EmulateMode, _round_tf32


def test_bf16_rounds_linear_inputs_not_the_bias() -> None:
    g = torch.Generator().manual_seed(0)
    x, w, b = (
        torch.randn(8, 16, generator=g),
        torch.randn(4, 16, generator=g),
        torch.randn(4, generator=g),
    )
    with EmulateMode("matmul-bf16") as mode:
        got = F.linear(x, w, b)
    want = F.linear(x.bfloat16().float(), w.bfloat16().float(), b)
    assert torch.equal(got, want)
    assert not torch.equal(got, F.linear(x, w, b))
    assert mode.calls == 1


def test_matmul_operator_and_addmm_are_covered() -> None:
    a, b, c = torch.randn(3, 5), torch.randn(5, 2), torch.randn(3, 2)
    with EmulateMode("matmul-fp16"):
        y1 = a @ b
        y2 = torch.addmm(c, a, b)
    assert torch.equal(y1, a.half().float() @ b.half().float())
    assert torch.equal(y2, torch.addmm(c, a.half().float(), b.half().float()))


def test_tf32_keeps_ten_mantissa_bits() -> None:
    x = torch.tensor([1.0 + 2**-11, 1.0 + 2**-10, 1.0 + 3 * 2**-11, float("inf")])
    y = _round_tf32(x)
    # 1 + 2^-11 is a tie and rounds to even (1.0); 1 + 3*2^-11 rounds up to 1 + 2^-9
    assert y.tolist() == [1.0, 1.0 + 2**-10, 1.0 + 2**-9, float("inf")]


def test_gradients_flow_through_emulation() -> None:
    w = torch.randn(3, 3, requires_grad=True)
    with EmulateMode("matmul-tf32"):
        (torch.randn(2, 3) @ w).sum().backward()
    assert w.grad is not None and torch.isfinite(w.grad).all()
