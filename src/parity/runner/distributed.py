"""Running a side as a torchrun job: process group, sharding, DDP or FSDP2, merged figures.

The launcher starts ``python -m torch.distributed.run ... -m parity.runner.worker DIR``;
every rank runs the worker. The process-group backend comes from the device adapter
(gloo for cpu, nccl for cuda, neuron for neuron, xccl for xpu). The global batch stays the
workload's batch size: rank ``r`` of ``w`` takes rows ``r::w`` of every batch, so a
2-process run sees the same data per step as a 1-process run and their loss curves can
be compared through the numerics gate. Rank 0 writes the bundle; the other ranks' step
times are gathered into it (``per_rank``). Figures cross between ranks as tensors on
the side's device, never as pickled objects. The all-reduce share is estimated after the
timed steps from a few steps under DDP's ``no_sync`` (no gradient all-reduce):
``1 - t(no_sync) / t(sync)``.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist
from torch import nn

from parity.devices.base import Device
from parity.model.manifest import DistInfo
from parity.model.metrics import AllReduce, RankFigures

NS = 1e-9


def from_env() -> tuple[int, int, int] | None:
    """(rank, world, local rank) when started by torchrun with more than one process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return None
    return int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0"))


def setup(device: Device) -> DistInfo | None:
    """Join the process group (do not touch device tensors before this)."""
    found = from_env()
    if found is None:
        return None
    rank, world, local = found
    backend = device.dist_backend or "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return DistInfo(rank=rank, world_size=world, local_rank=local, backend=backend)


def shard(
    data: dict[str, torch.Tensor], batch_size: int, info: DistInfo
) -> dict[str, torch.Tensor]:
    """Rows ``rank::world`` of every ``[n_batches, batch, ...]`` tensor."""
    world = info.world_size
    if batch_size % world:
        raise ValueError(
            f"batch size {batch_size} does not split over {world} processes: "
            "choose a --batch-size divisible by --nproc"
        )
    out = {}
    for name, t in data.items():
        if t.dim() >= 2 and t.shape[1] == batch_size:
            out[name] = t[:, info.rank :: world].contiguous()
        else:
            out[name] = t
    return out


def wrap(model: nn.Module, device: Device, info: DistInfo, fsdp: bool) -> nn.Module:
    if fsdp:
        from torch.distributed.fsdp import fully_shard

        for child in model.children():
            if any(p.requires_grad for p in child.parameters()):
                fully_shard(child)
        fully_shard(model)
        return model
    ids = device.ddp_device_ids(info.local_rank)
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)


def mean_losses(losses: Sequence[float], info: DistInfo, device: Device) -> list[float]:
    """The global loss per step: the mean of the ranks' shard losses."""
    t = torch.tensor(list(losses), dtype=torch.float32, device=device.torch_device)
    dist.all_reduce(t)
    return [float(x) for x in (t / info.world_size).cpu().tolist()]


def gather_medians(median_s: float | None, device: Device) -> tuple[RankFigures, ...]:
    """Every rank's median step time, in rank order (collective)."""
    mine = torch.tensor([math.nan if median_s is None else median_s], device=device.torch_device)
    parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, mine)
    values = [float(p.cpu().item()) for p in parts]
    return tuple(
        RankFigures(rank=r, median_step_s=None if math.isnan(v) else v)
        for r, v in enumerate(values)
    )


def allreduce_share(
    model: nn.Module, run: Callable[[int, int], list[int]], start: int, steps: int = 3
) -> AllReduce:
    """Time a few steps with and without DDP's gradient all-reduce."""
    no_sync = getattr(model, "no_sync", None)
    if no_sync is None:
        return AllReduce(share=None, method="model has no no_sync (FSDP): not estimated")
    synced = run(start, steps)
    with no_sync():
        local = run(start + steps, steps)
    t_sync, t_local = statistics.median(synced), statistics.median(local)
    return AllReduce(
        share=max(0.0, 1 - t_local / t_sync) if t_sync else None,
        step_with_allreduce_s=t_sync * NS,
        step_without_allreduce_s=t_local * NS,
        method="1 - median step under no_sync / median step with the all-reduce",
    )


def teardown() -> None:
    """Wait for every rank (rank 0 writes the bundle last), then leave the group."""
    with contextlib.suppress(Exception):
        if dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()
