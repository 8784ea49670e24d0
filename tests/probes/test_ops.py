"""The op scan's dispatch mode: inventory, phases, unsupported ops, host syncs, custom ops."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from parity.probes.ops import (
    OpScanMode,
    forward_tracebacks,
    is_unsupported_error,
    optimizer_phase,
)
from parity.probes.source import is_user_file

HAVE_FAKE = shutil.which(os.environ.get("CXX", "c++")) is not None and bool(shutil.which("ninja"))
if HAVE_FAKE:  # import before any backward pass (see parity.testing.fakedevice)
    from parity.testing import fakedevice
needs_fake = pytest.mark.skipif(not HAVE_FAKE, reason="the parityfake device needs c++ and ninja")
DEV = "parityfake"
HERE = Path(__file__).resolve()


def _line(marker: str) -> int:
    return next(i for i, ln in enumerate(HERE.read_text().splitlines(), 1) if marker in ln)


@pytest.fixture
def unsupported() -> Iterator[None]:
    before = fakedevice.unsupported()
    yield
    fakedevice.set_unsupported(before)


def _model(device: str) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3)).to(device)


def _train(device: str, mode: OpScanMode | None, steps: int = 2) -> list[torch.Tensor]:
    model = _model(device)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, foreach=False)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1)).to(device)
    for k in range(steps):
        if mode is not None:
            mode.step = k
        with mode if mode is not None else contextlib.nullcontext():
            opt.zero_grad()
            model(x).square().mean().backward()  # MARK: train forward
            opt.step()
    return [p.detach().cpu() for p in model.parameters()]


def test_unsupported_errors_are_told_from_bad_input() -> None:
    assert is_unsupported_error(NotImplementedError("Could not run 'aten::foo' with arguments"))
    assert is_unsupported_error(RuntimeError("\"addmm\" not implemented for 'Half'"))
    assert is_unsupported_error(RuntimeError("the op is not currently supported on this device"))
    assert not is_unsupported_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not is_unsupported_error(ValueError("not implemented"))


def test_user_files_are_told_from_internals() -> None:
    import parity.probes.ops as ops
    import parity.probes.source as source
    import parity.workloads.mlp as mlp

    assert is_user_file(str(HERE))
    assert not is_user_file(torch.nn.functional.__file__)
    assert not is_user_file(ops.__file__)
    assert not is_user_file(source.__file__)
    assert not is_user_file(os.__file__)
    assert is_user_file(str(mlp.__file__))  # built-in workloads are the user's code
    assert not is_user_file("<eval_with_key>.3")


def test_inventory_has_phases_dtypes_shapes_and_counts_per_step() -> None:
    mode = OpScanMode(torch.device("cpu"))
    with optimizer_phase(mode):
        _train("cpu", mode)
    rows = mode.inventory(2)
    phases = {r.phase for r in rows}
    assert phases == {"forward", "backward", "optimizer"}
    addmm = [r for r in rows if r.op == "aten::addmm.default" and r.phase == "forward"]
    assert addmm and addmm[0].dtypes == ("float32",) * 3
    assert addmm[0].count_per_step == (2, 2)
    assert addmm[0].shapes[0] == "[8] [4,6] [6,8]"
    gelu_bwd = [r for r in rows if r.op.startswith("aten::gelu_backward")]
    assert gelu_bwd and gelu_bwd[0].phase == "backward"
    assert any(r.op.startswith("aten::addcdiv_") for r in rows if r.phase == "optimizer")
    # on the CPU nothing is a host sync, a copy or a fallback
    assert not mode.findings("host_sync") and not mode.findings("device_mismatch")


@needs_fake
def test_every_unsupported_op_runs_on_the_cpu_and_is_listed(unsupported: None) -> None:
    want = ["aten::gelu", "aten::gelu_backward", "aten::addcdiv_", "aten::mm"]
    expected = _train("cpu", None)
    fakedevice.set_unsupported(want)
    with pytest.raises(NotImplementedError):
        _train(DEV, None)
    mode = OpScanMode(torch.device(DEV))
    with forward_tracebacks(), optimizer_phase(mode):
        got = _train(DEV, mode)
    # the CPU crutch gives the CPU's numbers, in-place optimizer updates included
    for a, b in zip(expected, got, strict=True):
        assert torch.equal(a, b)
    found = {f.op: f for f in mode.findings("unsupported")}
    assert sorted(found) == sorted(want)
    forward_line = _line("MARK: train forward")
    assert found["aten::gelu"].phase == "forward"
    assert found["aten::gelu"].source.line == forward_line
    # a backward op points at the forward line that made its autograd node
    assert found["aten::gelu_backward"].phase == "backward"
    assert found["aten::gelu_backward"].autograd_node == "GeluBackward0"
    assert found["aten::gelu_backward"].source.line == forward_line
    assert found["aten::addcdiv_"].phase == "optimizer"
    assert found["aten::addcdiv_"].dtypes == ("float32,float32,float32",)
    assert "is not supported on parityfake" in found["aten::mm"].detail


@needs_fake
def test_out_and_inplace_ops_write_back_into_device_tensors(unsupported: None) -> None:
    fakedevice.set_unsupported(["aten::add", "aten::mul_"])
    a, b = torch.arange(4.0), torch.ones(4)
    out = torch.empty(4, device=DEV)
    da, db = a.to(DEV), b.to(DEV)
    with OpScanMode(torch.device(DEV)) as mode:
        r = torch.add(da, db, out=out)
        da.mul_(3)
        s = da + db
    assert r is out and out.device.type == DEV and torch.equal(out.cpu(), a + b)
    assert torch.equal(da.cpu(), a * 3)
    assert s.device.type == DEV and torch.equal(s.cpu(), a * 3 + b)
    assert {f.op for f in mode.findings("unsupported")} == {"aten::add", "aten::mul_"}


@needs_fake
def test_a_genuine_error_is_not_swallowed(unsupported: None) -> None:
    x, w = torch.ones(2, 3, device=DEV), torch.ones(4, 5, device=DEV)
    with OpScanMode(torch.device(DEV)), pytest.raises(RuntimeError, match="shapes"):
        x @ w
    fakedevice.set_unsupported(["aten::mm"])
    # unsupported on the device, and wrong on the CPU too: the device's error is raised
    with OpScanMode(torch.device(DEV)), pytest.raises(NotImplementedError, match="aten::mm"):
        x @ w


@needs_fake
def test_host_syncs_and_copies_have_their_lines() -> None:
    x = torch.tensor([0.0, 1.0, -2.0]).to(DEV)
    with OpScanMode(torch.device(DEV)) as mode:
        x.sum().item()  # MARK: item
        x.nonzero()  # MARK: nonzero
        x[x > 0]  # MARK: mask
        x.cpu()  # MARK: to cpu
        torch.ones(2).to(DEV)  # MARK: to device
    syncs = {f.source.line: f for f in mode.findings("host_sync")}
    assert syncs[_line("MARK: item")].op == "aten::_local_scalar_dense"
    assert syncs[_line("MARK: nonzero")].op == "aten::nonzero"
    assert "boolean-mask" in syncs[_line("MARK: mask")].detail
    assert "copy to the host" in syncs[_line("MARK: to cpu")].detail
    copies = {f.source.line: f.detail for f in mode.findings("copy")}
    assert copies[_line("MARK: to cpu")] == "device to host"
    assert copies[_line("MARK: to device")] == "host to device"
    assert not mode.findings("device_mismatch")


def test_custom_ops_are_flagged_and_listed_first() -> None:
    import tests.fixtures.scan_workloads  # noqa: F401 - defines parity_test::scale

    mode = OpScanMode(torch.device("cpu"))
    with mode:
        torch.ops.parity_test.scale(torch.ones(3), 2.0)  # MARK: custom
        torch.relu(torch.ones(3))
    custom = mode.findings("custom_op")
    assert [c.op for c in custom] == ["parity_test::scale"]
    assert custom[0].source.line == _line("MARK: custom")
    rows = mode.inventory(1)
    assert rows[0].op == "parity_test::scale.default" and rows[0].custom
