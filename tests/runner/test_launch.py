from __future__ import annotations

import sys
from pathlib import Path

from parity.cli import with_nproc
from parity.runner.job import Job
from parity.runner.launch import command, torchrun_root_cause


def _job(side: str, **settings: object) -> Job:
    return Job(
        role="run",
        side=side,
        workload={},
        frozen="",
        fingerprint="f" * 64,
        parts={},
        description={},
        settings=dict(settings),
    )


def test_plain_side_is_one_interpreter() -> None:
    cmd = command(_job("cpu"), Path("/t"))
    assert cmd[:3] == [sys.executable, "-X", "faulthandler"]
    assert cmd[-3:] == ["-m", "parity.runner.worker", "/t"]
    assert "torch.distributed.run" not in cmd


def test_nproc_runs_under_torchrun_standalone() -> None:
    cmd = command(_job("cpu+nproc=4"), Path("/t"))
    assert "torch.distributed.run" in cmd and "--nproc-per-node=4" in cmd
    assert "--standalone" in cmd and "--max-restarts=0" in cmd


def test_multi_node_passes_the_rendezvous_through() -> None:
    cmd = command(_job("cuda+nproc=8", nnodes=2, rdzv_endpoint="h:29500"), Path("/t"))
    assert "--nnodes=2" in cmd and "--rdzv-endpoint=h:29500" in cmd
    assert "--standalone" not in cmd


def test_nproc_option_keeps_an_explicit_spec() -> None:
    assert with_nproc("cpu", 2) == "cpu+nproc=2"
    assert with_nproc("cuda+bf16", 1) == "cuda+bf16"
    assert with_nproc("cpu+nproc=4", 2) == "cpu+nproc=4"


def test_torchrun_root_cause_names_the_rank() -> None:
    text = """Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_03:46:45
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 2822)
"""
    assert torchrun_root_cause(text) == (
        "rank 1 killed by SIGKILL; torchrun stopped the other ranks"
    )
    assert torchrun_root_cause("nothing here") is None
