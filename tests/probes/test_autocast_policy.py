"""CUDA's autocast policy reproduced on the CPU, checked op by op.

Three witnesses: the installed torch's ``ATen/autocast_mode.h`` (the lists CUDA, XPU and
PrivateUse1 backends such as TorchNeuron register), the dispatcher's own registrations at
``AutocastCUDA`` (present in a CPU build), and the behaviour of the real C++ autocast
kernels: the ``parityfake`` test device registers CUDA's lists with ATen's own macros and
runs the CPU's kernels, so an op under its autocast must give the very bits the CPU gives
under the reproduction (dtype and values, and gradients through the casts)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

from parity.probes import autocast_policy as ap
from tests.conftest import HAVE_FAKEDEVICE, needs_fakedevice
from tests.fixtures.autocast_cases import BF16, CASES, inputs, leaves, to_device

if HAVE_FAKEDEVICE:
    from parity.testing import fakedevice  # noqa: F401  (before any backward pass)

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


@needs_fakedevice
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_op_gives_the_bits_cuda_autocast_gives(name: str) -> None:
    """The parityfake device's C++ autocast kernels (CUDA's lists) against the CPU under
    the reproduction: the same dtype and the same values, op by op."""
    run = CASES[name]
    given = inputs()
    torch.manual_seed(0)
    with torch.autocast("parityfake", dtype=BF16):
        want = [t.cpu() for t in leaves(run(to_device(given, "parityfake")))]
    torch.manual_seed(0)
    with ap.reproduce("cuda"), torch.autocast("cpu", dtype=BF16):
        got = leaves(run(given))
    assert [t.dtype for t in got] == [t.dtype for t in want], name
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def test_the_cpu_lists_differ_where_the_issue_says() -> None:
    """Without the reproduction the CPU keeps these in bf16; with it, fp32, as CUDA."""
    x = torch.randn(4, 8).to(BF16)
    ops: dict[str, Any] = {
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
        loss.backward()  # type: ignore[no-untyped-call]
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
