"""``train_ckpt`` mode: a run saves a checkpoint, another resumes it, and the curve is
the one an uninterrupted run draws."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from parity.model.job import CheckpointPlan, Event
from parity.model.numerics import CheckpointEvents, CheckpointRestored, CheckpointSaved
from tests.fixtures.jobs import run, workload_job

pytestmark = pytest.mark.slow


def test_save_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    job = workload_job("mlp-train", plan=CheckpointPlan())
    events: list[Event] = []
    first = run(
        replace(job, plan=CheckpointPlan(stop_at=3, save_at=3, checkpoint_dir=str(ckpt))),
        tmp_path,
        "first",
        on_event=events.append,
    )
    assert first.ok, first.manifest.reason
    assert first.outputs is not None and len(first.losses) == 3
    assert first.outputs.checkpoint == CheckpointEvents(
        start=0, saved=CheckpointSaved(step=3, to=str(ckpt))
    )
    (saved,) = [e for e in events if e.event == "checkpoint"]
    assert saved.step == 3 and saved.path == str(ckpt) and saved.pid
    resumed = run(replace(job, plan=CheckpointPlan(resume_from=str(ckpt))), tmp_path, "b")
    assert resumed.ok, resumed.manifest.reason
    assert resumed.outputs is not None and resumed.outputs.checkpoint == CheckpointEvents(
        start=3, restored=CheckpointRestored(step=3, saved_by="cpu", source=str(ckpt))
    )
    assert resumed.metrics is not None and len(resumed.metrics.step_samples_s) == 3
    whole = run(job, tmp_path, "whole")
    assert whole.ok and len(resumed.losses) == 6
    assert resumed.losses == pytest.approx(whole.losses, rel=1e-6)


def test_a_run_that_is_not_killed_in_time_fails(tmp_path: Path) -> None:
    plan = CheckpointPlan(stop_at=2, await_kill_s=0.1)
    bundle = run(workload_job("mlp-train", plan=plan), tmp_path)
    assert bundle.status == "failed"
    assert bundle.manifest.reason == (
        "CheckpointError in phase 'awaiting kill': not killed within 0.1 s after its last step"
    )
