"""``measure`` mode through the real launcher: a typed job in, a typed bundle out."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.bundle import CAPTURE_TENSORS, read_doc
from parity.model.job import JOB_FILE, Event, Job, TimingPlan
from tests.conftest import FIXTURES
from tests.fixtures.jobs import run, workload_job

pytestmark = pytest.mark.slow


def test_a_training_side_writes_every_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a cache of its own: another test of the session may have cached this side's probes,
    # which would be copied instead of run (``runner.probecache``)
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    events: list[Event] = []
    job = workload_job("mlp-train", plan=TimingPlan(capture=True))
    bundle = run(job, tmp_path, on_event=events.append)
    assert bundle.ok, bundle.manifest.reason
    m, resolved = bundle.manifest, bundle.manifest.resolved
    assert m.mode == "measure" and m.environment is not None and m.pid is not None
    assert resolved is not None and resolved.steps == 6 and resolved.threads >= 1
    assert resolved.items_per_step is not None and resolved.items_per_step.samples == 8
    metrics = bundle.metrics
    assert metrics is not None and len(metrics.step_samples_s) == 6
    assert metrics.phases.start_import_s is not None and metrics.phases.load_s is not None
    assert metrics.phases.start_import_s > metrics.phases.worker_import_s > 0  # type: ignore[operator]
    assert metrics.memory.load is not None and metrics.memory.first_step is not None
    assert metrics.memory.steps.host_peak_rss is not None
    assert metrics.flops is not None and metrics.flops.per_step and metrics.flops.achieved_flops
    # where the steps' threads ran, timed after them: only with more than one thread
    assert (metrics.thread_handoff_ns is not None) == (resolved.threads > 1)
    assert len(bundle.losses) == 6 and bundle.outputs is not None
    assert set(bundle.outputs.outputs) == {"eval_logits"}
    # the numerics probe and the op scan, after the timed steps
    assert bundle.capture is not None and bundle.capture.available
    assert bundle.capture.layers and bundle.capture.gradients
    assert (bundle.path / CAPTURE_TENSORS).is_file()
    assert bundle.ops is not None and bundle.ops.plain_run is not None
    assert bundle.ops.plain_run.note == "the timed steps" and bundle.ops.first_step == 6
    phases = [e.phase for e in events if e.event == "phase"]
    assert phases == [
        "setup", "load", "first step", "steps", "numerics probe", "scan", "done"
    ]  # fmt: skip
    assert any(e.event == "progress" and e.done == 6 for e in events)
    job = read_doc(bundle.path / JOB_FILE, Job)
    assert job.spawned_ns > 0 and job.fingerprint == m.workload.fingerprint


def test_settings_that_change_numerics_are_recorded_after_the_run(tmp_path: Path) -> None:
    side = "cpu+bf16+threads=1+deterministic+emulate=matmul-bf16"
    job = workload_job("cnn-infer", side, TimingPlan(compliance=True, same_input=True), repeat=1)
    bundle = run(job, tmp_path)
    assert bundle.ok, bundle.manifest.reason
    resolved = bundle.manifest.resolved
    assert resolved is not None and resolved.threads == 1 and resolved.deterministic
    assert resolved.autocast_device_type == "cpu" and resolved.autocast_dtype == "bfloat16"
    assert resolved.emulate == "matmul-bf16"
    assert resolved.emulated_calls is not None and resolved.emulated_calls > 0
    assert resolved.nondeterministic_ops is not None  # checked, whatever it found
    metrics = bundle.metrics
    assert metrics is not None and metrics.inference is not None
    assert metrics.inference.latency_s.n == len(metrics.steady_samples)
    # a compliance run counts no FLOPs, scans no ops (the verdict reads the first
    # repeat's census) and captures no numerics
    assert metrics.flops is not None and metrics.flops.per_step is None
    assert bundle.ops is None
    assert bundle.capture is None


def test_a_generation_side_has_latency_figures(tmp_path: Path) -> None:
    bundle = run(workload_job("gpt-generate"), tmp_path)
    assert bundle.ok, bundle.manifest.reason
    metrics = bundle.metrics
    assert metrics is not None and metrics.generation is not None
    gen = metrics.generation
    assert gen.ttft_s.n == len(metrics.steady_samples) and gen.output_tokens > 1
    assert gen.tpot_s.p50 is not None and gen.tpot_s.p50 > 0
    assert metrics.throughput.tokens_per_s is not None


def test_a_torchrun_side_merges_its_ranks(tmp_path: Path) -> None:
    bundle = run(workload_job("mlp-train", "cpu+nproc=2"), tmp_path)
    assert bundle.ok, bundle.manifest.reason
    dist = bundle.manifest.distributed
    assert dist is not None and dist.world_size == 2 and dist.rank == 0 and dist.backend == "gloo"
    metrics = bundle.metrics
    assert metrics is not None and metrics.distributed is not None
    assert [r.rank for r in metrics.distributed.per_rank] == [0, 1]
    assert all(r.median_step_s and r.median_step_s > 0 for r in metrics.distributed.per_rank)
    assert metrics.distributed.allreduce.share is not None
    assert len(bundle.losses) == 6 and bundle.ops is None  # no scan under torchrun


def test_a_rank_that_dies_is_named(tmp_path: Path) -> None:
    job = workload_job(f"{FIXTURES / 'workloads.py'}:KillRankOne", "cpu+nproc=2")
    bundle = run(job, tmp_path)
    assert bundle.status == "failed"
    reason = bundle.manifest.reason or ""
    # rank 0 may see its peer gone and exit before torchrun stops it: either is named
    assert reason.startswith("rank 1 killed by SIGKILL; "), reason
    assert "torchrun stopped the other ranks" in reason, reason


LOADERS = FIXTURES / "loaders.py"
#: one thread: two OpenMP threads on a busy two-core machine stall for 100s of ms a step
ONE_THREAD = "cpu+threads=1"


def test_a_loader_that_sleeps_per_batch_is_input_bound(tmp_path: Path) -> None:
    job = workload_job(
        f"{LOADERS}:LoaderTrain",
        ONE_THREAD,
        TimingPlan(capture=True),
        steps=10,
        overrides=(("sleep_ratio", "2"),),  # twice the step's compute, on any CPU
    )
    bundle = run(job, tmp_path)
    assert bundle.ok, bundle.manifest.reason
    metrics = bundle.metrics
    assert metrics is not None and metrics.input_pipeline is not None
    fed = metrics.input_pipeline
    assert fed.source == "loader" and fed.input_bound, fed.reason
    assert fed.input_share > 0.5 and fed.wait_s > fed.step_s / 2
    assert fed.prefetched_s is not None and fed.prefetched_s < fed.step_s / 2
    assert fed.steps == len(metrics.steady_samples)
    # the prefetched pass adds no loss and leaves the numerics as the timed steps left them
    assert len(bundle.losses) == 10 and bundle.outputs is not None
    assert set(bundle.outputs.outputs) == {"eval_logits"}
    assert bundle.capture is not None and bundle.capture.available


def test_prefetched_inputs_are_not_input_bound(tmp_path: Path) -> None:
    job = workload_job(
        f"{LOADERS}:LoaderInfer", ONE_THREAD, steps=10, overrides=(("prefetched", "1"),)
    )
    bundle = run(job, tmp_path)
    assert bundle.ok, bundle.manifest.reason
    fed = bundle.metrics.input_pipeline if bundle.metrics is not None else None
    assert fed is not None and not fed.input_bound, fed
    assert fed.input_share < 0.2 and fed.prefetched_samples_s is not None
    # the pass is bracketed: as many loader-fed steps after it
    assert fed.after_samples_s is not None
    assert len(fed.after_samples_s) == len(fed.prefetched_samples_s)
    # a list of batches does nothing beside the step: its cost is its wait and copy
    assert fed.background is False


def test_a_loader_whose_runner_takes_no_batches_fails_the_side(tmp_path: Path) -> None:
    bundle = run(workload_job(f"{LOADERS}:NoBatches", steps=2), tmp_path)
    assert bundle.status == "failed"
    assert "takes no batches: implement step_batch" in (bundle.manifest.reason or "")


@pytest.mark.parametrize(("after_s", "ran"), [(0.0, 4), (600.0, 12)])
def test_a_timing_process_past_its_cut_ends_once_enough_steps_are_in(
    tmp_path: Path, after_s: float, ran: int
) -> None:
    """A timing process whose steps pass ``cut.after_s`` stops once ``cut.at_least`` are
    in (the first step and three more here); one within it runs them all."""
    from dataclasses import replace

    from parity.model.job import StepCut

    job = replace(
        workload_job(
            "mlp-train", ONE_THREAD, TimingPlan(cut=StepCut(after_s=after_s, at_least=4)), steps=12
        ),
        repeat=1,
    )
    bundle = run(job, tmp_path)
    assert bundle.ok, bundle.manifest.reason
    assert bundle.metrics is not None and len(bundle.metrics.step_samples_s) == ran
    assert len(bundle.losses) == ran
