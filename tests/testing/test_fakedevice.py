"""The parityfake PrivateUse1 test device (parity.testing.fakedevice)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

if shutil.which(os.environ.get("CXX", "c++")) is None or shutil.which("ninja") is None:
    pytest.skip(
        "building the parityfake extension needs a C++ compiler and ninja",
        allow_module_level=True,
    )

# Import at collection time, before any test runs a backward pass.
from parity.testing import fakedevice

DEV = fakedevice.DEVICE_NAME
# The asynchronous mode: each kernel costs COST_US of device time. KERNELS of them
# queue far more device time than the host needs to launch them (tens of microseconds
# each), so a reading taken without waiting misses most of it even on a busy machine.
COST_US = 2000.0
KERNELS = 100
QUEUED_NS = round(KERNELS * COST_US * 1000)


@pytest.fixture
def restore_unsupported() -> Iterator[None]:
    before = fakedevice.unsupported()
    yield
    fakedevice.set_unsupported(before)


def _train(device: str, foreach: bool | None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(
        device
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=foreach)
    inputs = torch.randn(6, 8).to(device)
    target = torch.randn(6, 4).to(device)
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), target)
        loss.backward()
        opt.step()
    return loss.detach().cpu(), [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("foreach", [None, False], ids=["default", "foreach_off"])
def test_mlp_train_step_matches_cpu_exactly(foreach: bool | None) -> None:
    # CPU AdamW defaults to the per-tensor path; on parityfake the default is
    # the foreach path (a PrivateUse1 device counts as foreach-capable).
    cpu_loss, cpu_params = _train("cpu", foreach=False)
    fake_loss, fake_params = _train(DEV, foreach=foreach)
    assert torch.equal(cpu_loss, fake_loss)
    assert len(cpu_params) == len(fake_params) == 4
    for cpu_p, fake_p in zip(cpu_params, fake_params, strict=True):
        assert torch.equal(cpu_p, fake_p)


def test_parameters_live_on_the_device() -> None:
    layer = torch.nn.Linear(3, 2).to(DEV)
    assert layer.weight.device == torch.device(DEV, 0)
    assert layer.weight.is_parityfake  # type: ignore[attr-defined]
    assert torch.parityfake is fakedevice  # type: ignore[attr-defined]


def _conv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.conv2d(x, w, padding=1)


def _layer_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (8,), w)


def _attention(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True)


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [
        (_conv, [(2, 3, 8, 8), (4, 3, 3, 3)]),
        (_layer_norm, [(2, 3, 8), (8,)]),
        (_attention, [(1, 2, 16, 8), (1, 2, 16, 8)]),
    ],
    ids=["conv2d", "layer_norm", "sdpa"],
)
def test_forward_and_backward_match_cpu(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], shapes: list[tuple[int, ...]]
) -> None:
    # These reach a backend through device-dependent paths (conv and sdpa
    # pick an implementation per device, layer_norm has a generic version).
    torch.manual_seed(0)
    inputs = [torch.randn(shape) for shape in shapes]
    results = []
    for device in ("cpu", DEV):
        leaves = [t.clone().to(device).requires_grad_() for t in inputs]
        out = fn(*leaves)
        out.square().sum().backward()
        results.append(
            [out.detach().cpu()] + [leaf.grad.cpu() for leaf in leaves if leaf.grad is not None]
        )
    assert len(results[1]) == len(shapes) + 1
    for cpu_t, fake_t in zip(*results, strict=True):
        assert torch.equal(cpu_t, fake_t)


def test_views_alias_device_memory() -> None:
    base = torch.zeros(4, 3)
    fake = base.to(DEV)
    fake[1].add_(1)
    fake.t()[2].mul_(5)
    fake[2:].copy_(torch.arange(3.0))  # broadcasting copy into a view
    base[1].add_(1)
    base.t()[2].mul_(5)
    base[2:].copy_(torch.arange(3.0))
    assert torch.equal(fake.cpu(), base)


def test_current_accelerator_is_parityfake() -> None:
    if not hasattr(torch, "accelerator"):
        pytest.skip("this torch has no torch.accelerator")
    accelerator = torch.accelerator.current_accelerator()
    assert accelerator is not None
    assert accelerator.type == DEV
    assert torch.accelerator.device_count() == 1


def test_unsupported_op_raises_until_removed(restore_unsupported: None) -> None:
    x = torch.randn(4, device=DEV)
    fakedevice.set_unsupported(["aten::gelu"])
    assert fakedevice.unsupported() == {"aten::gelu"}
    with pytest.raises(NotImplementedError, match=r"aten::gelu is not supported on parityfake"):
        torch.nn.functional.gelu(x)
    with pytest.raises(NotImplementedError, match=r"aten::gelu is not supported"):
        torch.nn.functional.gelu(x, approximate="tanh")
    torch.relu(x)  # other ops are unaffected
    fakedevice.set_unsupported([])
    assert torch.equal(torch.nn.functional.gelu(x).cpu(), torch.nn.functional.gelu(x.cpu()))


def test_unsupported_names_are_checked() -> None:
    with pytest.raises(ValueError, match="overload"):
        fakedevice.set_unsupported(["aten::add.Tensor"])


def test_memory_counters() -> None:
    before = fakedevice.memory_allocated()
    block = torch.empty(1 << 20, dtype=torch.uint8, device=DEV)
    assert fakedevice.memory_allocated() == before + (1 << 20)
    assert fakedevice.max_memory_allocated() >= before + (1 << 20)
    assert fakedevice.memory_reserved() == fakedevice.memory_allocated()
    del block
    assert fakedevice.memory_allocated() == before
    assert fakedevice.max_memory_allocated() >= before + (1 << 20)
    fakedevice.reset_peak_memory_stats()
    assert fakedevice.max_memory_allocated() == before
    assert fakedevice.max_memory_reserved() == fakedevice.memory_reserved()
    if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "memory_allocated"):
        assert torch.accelerator.memory_allocated() == before


def test_synchronize_counts() -> None:
    before = fakedevice.sync_count()
    fakedevice.synchronize()
    torch.parityfake.synchronize(DEV)  # type: ignore[attr-defined]
    assert fakedevice.sync_count() == before + 2
    if hasattr(torch, "accelerator"):
        torch.accelerator.synchronize()
        assert fakedevice.sync_count() == before + 3


def test_device_module_reports() -> None:
    assert fakedevice.is_available()
    assert fakedevice.device_count() == 1
    assert fakedevice.current_device() == 0
    assert fakedevice.get_device_name() == "parity fake accelerator"
    props = fakedevice.get_device_properties(DEV)
    assert props.name == "parity fake accelerator"
    assert props.total_memory > 0
    assert fakedevice.is_bf16_supported()
    assert fakedevice._is_in_bad_fork() is False
    with pytest.raises(ValueError):
        fakedevice.set_device(1)


def test_autocast_bf16_linear() -> None:
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 4)
    x = torch.randn(3, 8)
    fake_layer = torch.nn.Linear(8, 4).to(DEV)
    fake_layer.load_state_dict(layer.state_dict())
    with torch.autocast(device_type=DEV, dtype=torch.bfloat16):
        out = fake_layer(x.to(DEV))
    assert out.device.type == DEV
    assert out.dtype == torch.bfloat16
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        expected = layer(x)
    assert torch.equal(out.cpu(), expected)


@pytest.mark.slow
def test_env_vars_configure_a_fresh_process() -> None:
    code = (
        "import torch, parity.testing.fakedevice as fd\n"
        "assert fd.unsupported() == {'aten::gelu'}, fd.unsupported()\n"
        "assert fd.async_us() == 250.0, fd.async_us()\n"
        "x = torch.ones(2, device='parityfake')\n"
        "try:\n"
        "    torch.nn.functional.gelu(x)\n"
        "except NotImplementedError as err:\n"
        "    assert 'aten::gelu is not supported on parityfake' in str(err), err\n"
        "else:\n"
        "    raise SystemExit('gelu ran')\n"
        "print('refused')\n"
    )
    src = str(Path(fakedevice.__file__).resolve().parents[2])
    env = dict(os.environ, PARITY_FAKE_UNSUPPORTED="aten::gelu", PARITY_FAKE_ASYNC_US="250")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "refused"


def _launch(x: torch.Tensor, kernels: int = KERNELS) -> torch.Tensor:
    for _ in range(kernels):
        x = x + 1
    return x


def test_async_work_finishes_after_the_op_returns() -> None:
    x = torch.zeros(4, device=DEV)
    with fakedevice.asynchronous(COST_US):
        assert fakedevice.async_us() == COST_US
        kernels = fakedevice.kernel_count()
        t0 = time.perf_counter_ns()
        y = _launch(x)
        queued = fakedevice.queued_ns()
        fakedevice.synchronize()
        elapsed = time.perf_counter_ns() - t0
        assert fakedevice.queued_ns() == 0
    assert fakedevice.async_us() == 0
    assert fakedevice.kernel_count() - kernels == KERNELS
    assert queued > 0  # the ops returned before the device was done
    assert elapsed >= QUEUED_NS
    assert torch.equal(y.cpu(), torch.full((4,), float(KERNELS)))  # results are unchanged


@pytest.mark.parametrize(
    ("read", "waits"),
    [
        (lambda t: t.cpu(), True),
        (lambda t: t.sum().item(), True),
        (lambda t: t.nonzero(), True),
        (lambda t: torch.accelerator.synchronize(), True),
        (lambda t: t.to("cpu", non_blocking=True), False),
    ],
    ids=["cpu", "item", "nonzero", "accelerator_sync", "non_blocking_copy"],
)
def test_host_reads_wait_for_the_queued_work(
    read: Callable[[torch.Tensor], object], waits: bool
) -> None:
    x = torch.zeros(4, device=DEV)
    with fakedevice.asynchronous(COST_US):
        t0 = time.perf_counter_ns()
        read(_launch(x))
        elapsed = time.perf_counter_ns() - t0
        queued = fakedevice.queued_ns()
    if waits:
        assert queued == 0 and elapsed >= QUEUED_NS
    else:
        assert queued > 0


def test_events_time_the_device_not_the_launch() -> None:
    x = torch.zeros(4, device=DEV)
    start = torch.Event(device=DEV, enable_timing=True)
    end = torch.Event(device=DEV, enable_timing=True)
    with fakedevice.asynchronous(COST_US):
        start.record()
        _launch(x)
        end.record()
        done_at_once = end.query()
        end.synchronize()
        assert end.query() and fakedevice.queued_ns() == 0
    assert not done_at_once
    assert start.elapsed_time(end) >= QUEUED_NS / 1e6  # milliseconds


def test_memory_counters_follow_the_queue() -> None:
    block = 1 << 20
    x = torch.zeros(4, device=DEV)
    before = fakedevice.memory_allocated()
    fakedevice.reset_peak_memory_stats()
    with fakedevice.asynchronous(COST_US):
        y = _launch(x)
        buffer = torch.empty(block, dtype=torch.uint8, device=DEV)  # counted after the queue
        early = (fakedevice.memory_allocated(), fakedevice.max_memory_allocated())
        still_queued = fakedevice.queued_ns() > 0
        del buffer  # a free waits for the work queued before it
        fakedevice.synchronize()
        late = (fakedevice.memory_allocated(), fakedevice.max_memory_allocated())
    assert still_queued  # the early reading was taken before the device got there
    assert early[1] < before + block
    # applied in queue order, the counters reach the synchronous device's figures
    assert late == (before + y.nbytes, before + block + y.nbytes)


def test_async_cost_is_checked() -> None:
    with pytest.raises(ValueError, match="microseconds >= 0"):
        fakedevice.set_async_us(-1)
    with pytest.raises(ValueError, match=r"PARITY_FAKE_ASYNC_US='fast' is not a kernel cost"):
        fakedevice._async_from_env("fast")
    assert fakedevice._async_from_env(" ") == 0.0
    assert fakedevice._async_from_env("250") == 250.0
