"""CUDA's autocast policy reproduced on the CPU, checked op by op.

Three witnesses: the installed torch's ``ATen/autocast_mode.h`` (the lists CUDA, XPU and
PrivateUse1 backends such as TorchNeuron register), the dispatcher's own registrations at
``AutocastCUDA`` (present in a CPU build), and the behaviour of the real C++ autocast
kernels: the ``parityfake`` test device registers CUDA's lists with ATen's own macros and
runs the CPU's kernels, so an op under its autocast must give the very bits the CPU gives
under the reproduction (dtype and values, and gradients through the casts)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from parity.probes import autocast_policy as ap
from tests.conftest import HAVE_FAKEDEVICE, needs_fakedevice

if HAVE_FAKEDEVICE:
    from parity.testing import fakedevice  # noqa: F401  (before any backward pass)

BF16 = torch.bfloat16
CUDA_ONLY = {"cudnn_convolution", "cudnn_convolution_transpose"}  # never run on a CPU


def test_the_table_is_the_headers_lists_and_the_banned_op() -> None:
    parsed = ap.parse_header(ap.header().read_text())
    table = dict(ap.CUDA_POLICY)
    assert table.pop("binary_cross_entropy") == "banned"
    assert table == parsed
    assert len(parsed) > 100  # a parse that found a handful would be wrong


def test_the_table_is_what_the_dispatcher_registers_for_cuda() -> None:
    registered = {
        n.removeprefix("aten::")
        for n in torch._C._dispatch_get_all_op_names()
        if n.startswith("aten::")
        and torch._C._dispatch_has_kernel_for_dispatch_key(n, "AutocastCUDA")
    }
    assert set(ap.CUDA_POLICY) <= registered
    assert registered - set(ap.CUDA_POLICY) <= CUDA_ONLY


def _mixed() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    return {
        "a": r(4, 6), "b": r(6, 5), "c": r(4, 5), "v": r(6), "u": r(4), "w": r(5),
        "x3": r(2, 4, 6), "y3": r(2, 6, 3), "z3": r(2, 4, 3), "img": r(2, 3, 8, 8),
        "k": r(4, 3, 3, 3), "seq": r(2, 3, 16), "k1": r(4, 3, 3), "vol": r(1, 2, 4, 4, 4),
        "pos": r(4, 6).abs() + 0.1, "q": r(2, 2, 5, 8), "kk": r(2, 2, 5, 8), "vv": r(2, 2, 5, 8),
        "slope": torch.tensor([0.25]), "bits": torch.rand(4, 6, generator=g).round(),
        "zeros": torch.zeros(4, 6), "index": torch.zeros(4, 6, dtype=torch.long),
        "labels": torch.tensor([0, 1, 2, 3]),
    }  # fmt: skip


T = dict[str, torch.Tensor]
#: op name -> what to run (inputs: a dict of fp32 tensors, some cast to bf16 inside)
CASES: dict[str, Callable[[T], Any]] = {
    # lower_precision_fp
    "mm": lambda t: torch.mm(t["a"], t["b"]),
    "addmm": lambda t: torch.addmm(t["c"], t["a"], t["b"]),
    "matmul": lambda t: t["a"] @ t["b"],
    "linear": lambda t: F.linear(t["a"], t["b"].t(), t["w"]),
    "bmm": lambda t: torch.bmm(t["x3"], t["y3"]),
    "baddbmm": lambda t: torch.baddbmm(t["z3"], t["x3"], t["y3"]),
    "mv": lambda t: torch.mv(t["a"], t["v"]),
    "addmv": lambda t: torch.addmv(t["u"], t["a"], t["v"]),
    "addr": lambda t: torch.addr(t["c"], t["u"], t["w"]),
    "einsum": lambda t: torch.einsum("ij,jk->ik", t["a"], t["b"]),
    "conv1d": lambda t: F.conv1d(t["seq"], t["k1"]),
    "conv2d": lambda t: F.conv2d(t["img"], t["k"]),
    "prelu": lambda t: F.prelu(t["a"], t["slope"]),
    "sdpa": lambda t: F.scaled_dot_product_attention(t["q"], t["kk"], t["vv"], is_causal=True),
    # fp32 (bf16 inputs)
    "exp": lambda t: torch.exp(t["a"].to(BF16)),
    "log": lambda t: torch.log(t["pos"].to(BF16)),
    "rsqrt": lambda t: torch.rsqrt(t["pos"].to(BF16)),
    "pow.Tensor_Scalar": lambda t: torch.pow(t["a"].to(BF16), 2),
    "pow.Tensor_Tensor": lambda t: torch.pow(t["pos"].to(BF16), t["a"].to(BF16)),
    "layer_norm": lambda t: F.layer_norm(t["a"].to(BF16), (6,)),
    "group_norm": lambda t: F.group_norm(t["img"].to(BF16), 3),
    "rms_norm": lambda t: F.rms_norm(t["a"].to(BF16), (6,)),
    "softplus": lambda t: F.softplus(t["a"].to(BF16)),
    "mse_loss": lambda t: F.mse_loss(t["a"].to(BF16), t["a"].flip(0).to(BF16)),
    "l1_loss": lambda t: F.l1_loss(t["a"].to(BF16), t["a"].flip(0).to(BF16)),
    "nll_loss": lambda t: F.nll_loss(t["a"].to(BF16), t["labels"]),
    "cross_entropy": lambda t: F.cross_entropy(t["a"].to(BF16), t["labels"]),
    "kl_div": lambda t: F.kl_div(t["a"].to(BF16), t["pos"].to(BF16), reduction="batchmean"),
    "bce_with_logits": lambda t: F.binary_cross_entropy_with_logits(
        t["a"].to(BF16), t["bits"].to(BF16)
    ),
    "cosine_similarity": lambda t: F.cosine_similarity(t["a"].to(BF16), t["a"].flip(0).to(BF16)),
    "cdist": lambda t: torch.cdist(t["a"].to(BF16), t["a"].to(BF16)),
    "logsumexp": lambda t: torch.logsumexp(t["a"].to(BF16), dim=1),
    "interpolate": lambda t: F.interpolate(t["img"].to(BF16), scale_factor=2.0, mode="nearest"),
    # fp32_set_opt_dtype
    "softmax": lambda t: torch.softmax(t["a"].to(BF16), dim=-1),
    "log_softmax": lambda t: torch.log_softmax(t["a"].to(BF16), dim=-1),
    "sum": lambda t: t["a"].to(BF16).sum(),
    "sum.dim": lambda t: t["a"].to(BF16).sum(dim=0),
    "sum.given_dtype": lambda t: t["a"].to(BF16).sum(dtype=torch.float64),
    "cumsum": lambda t: torch.cumsum(t["a"].to(BF16), dim=1),
    "cumprod": lambda t: torch.cumprod(t["a"].to(BF16), dim=1),
    "prod": lambda t: t["a"].to(BF16).prod(),
    "vector_norm": lambda t: torch.linalg.vector_norm(t["a"].to(BF16)),
    # fp32_append_dtype
    "norm.Scalar": lambda t: torch.ops.aten.norm.Scalar(t["a"].to(BF16), 2),
    "norm.ScalarOpt_dim": lambda t: torch.ops.aten.norm.ScalarOpt_dim(t["a"].to(BF16), 2, [1]),
    # promote
    "addcmul": lambda t: torch.addcmul(t["a"], t["a"].to(BF16), t["a"].to(BF16)),
    "addcmul.all_low": lambda t: torch.addcmul(*(t["a"].to(BF16),) * 3),
    "atan2": lambda t: torch.atan2(t["a"].to(BF16), t["a"]),
    "dot": lambda t: torch.dot(t["v"].to(BF16), t["v"]),
    "cross": lambda t: torch.linalg.cross(t["x3"][..., :3].to(BF16), t["y3"][:, :4, :].to(BF16)),
    "scatter_add": lambda t: t["zeros"].scatter_add(0, t["index"], t["a"]),
    "scatter_add.low": lambda t: t["zeros"].to(BF16).scatter_add(0, t["index"], t["a"].to(BF16)),
    "tensordot": lambda t: torch.tensordot(t["a"].to(BF16), t["b"], dims=1),
    # in the CPU's lists and not in CUDA's: the reproduction must leave them alone
    "trace": lambda t: torch.trace(t["a"].to(BF16)),
    "mse_loss.fp32": lambda t: F.mse_loss(t["a"], t["a"].flip(0)),
    "cat": lambda t: torch.cat([t["a"].to(BF16), t["a"]]),
    "stft-free fft": lambda t: torch.fft.rfft(t["a"].to(BF16).float()),
    # not in any list: as they are
    "relu": lambda t: torch.relu(t["a"].to(BF16)),
    "gelu": lambda t: F.gelu(t["a"].to(BF16)),
}


def _to(tree: Any, device: str) -> Any:
    if isinstance(tree, dict):
        return {k: _to(v, device) for k, v in tree.items()}
    return tree.to(device) if isinstance(tree, torch.Tensor) else tree


def _leaves(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for t in out if isinstance(t, torch.Tensor)]


@needs_fakedevice
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_op_gives_the_bits_cuda_autocast_gives(name: str) -> None:
    """The parityfake device's C++ autocast kernels (CUDA's lists) against the CPU under
    the reproduction: the same dtype and the same values, op by op."""
    run = CASES[name]
    inputs = _mixed()
    torch.manual_seed(0)
    with torch.autocast("parityfake", dtype=BF16):
        want = [t.cpu() for t in _leaves(run(_to(inputs, "parityfake")))]
    torch.manual_seed(0)
    with ap.reproduce("cuda"), torch.autocast("cpu", dtype=BF16):
        got = _leaves(run(inputs))
    assert [t.dtype for t in got] == [t.dtype for t in want], name
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def test_the_cpu_lists_differ_where_the_issue_says() -> None:
    """Without the reproduction the CPU keeps these in bf16; with it, fp32, as CUDA."""
    x = torch.randn(4, 8).to(BF16)
    ops = {
        "layer_norm": lambda: F.layer_norm(x, (8,)),
        "softmax": lambda: torch.softmax(x, -1),
        "log_softmax": lambda: torch.log_softmax(x, -1),
        "exp": lambda: torch.exp(x),
        "sum": lambda: x.sum(),
    }
    with torch.autocast("cpu", dtype=BF16):
        assert {k: f().dtype for k, f in ops.items()} == dict.fromkeys(ops, BF16)
    with ap.reproduce("cuda"), torch.autocast("cpu", dtype=BF16):
        assert {k: f().dtype for k, f in ops.items()} == dict.fromkeys(ops, torch.float32)
    with torch.autocast("cpu", dtype=BF16):  # and the block leaves nothing behind
        assert F.layer_norm(x, (8,)).dtype == BF16


def test_the_banned_op_is_refused_as_the_target_refuses_it() -> None:
    p = torch.rand(4).to(BF16)
    with (
        ap.reproduce("cuda"),
        torch.autocast("cpu", dtype=BF16),
        pytest.raises(RuntimeError, match="unsafe to autocast"),
    ):
        F.binary_cross_entropy(p, p.round())


@needs_fakedevice
def test_a_training_step_gives_the_same_loss_and_gradients() -> None:
    """A transformer block's forward and backward (layer norm, attention, softmax, GELU,
    cross-entropy): the gradients through the casts are the device's, bit for bit."""
    torch.manual_seed(0)
    block = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    head = torch.nn.Linear(16, 7)
    x, y = torch.randn(3, 5, 16), torch.randint(0, 7, (3 * 5,))

    def step(device: str, ctx: Any) -> tuple[torch.Tensor, list[torch.Tensor]]:
        b, h = _clone(block, device), _clone(head, device)
        with ctx, torch.autocast(device, dtype=BF16):
            loss = F.cross_entropy(h(b(x.to(device))).flatten(0, 1), y.to(device))
        loss.backward()
        grads = [p.grad.cpu() for p in [*b.parameters(), *h.parameters()] if p.grad is not None]
        return loss.detach().cpu(), grads

    want_loss, want_grads = step("parityfake", _null())
    got_loss, got_grads = step("cpu", ap.reproduce("cuda"))
    assert got_loss.dtype == want_loss.dtype == torch.float32
    torch.testing.assert_close(got_loss, want_loss, rtol=0, atol=0)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    cpu_loss, _ = step("cpu", _null())  # the CPU's own lists round differently
    assert not torch.equal(cpu_loss, want_loss)


def _null() -> Any:
    import contextlib

    return contextlib.nullcontext()


def _clone(module: torch.nn.Module, device: str) -> torch.nn.Module:
    import copy

    return copy.deepcopy(module).to(device)


@needs_fakedevice
def test_observe_names_the_policy_a_device_follows() -> None:
    cpu = ap.observe(torch.device("cpu"), "cpu", BF16)
    fake = ap.observe(torch.device("parityfake"), "parityfake", BF16)
    assert ap.classify(cpu) == "cpu" and ap.classify(fake) == "cuda"
    with ap.reproduce("cuda"):
        assert ap.classify(ap.observe(torch.device("cpu"), "cpu", BF16)) == "cuda"
    assert ap.classify({"layer_norm": "float32"}) is None
