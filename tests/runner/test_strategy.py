"""Launch strategies: the orchestrator asks one for each job; the inline strategy runs a
real worker in this process, so the rounds, the stopping rule and resume are tested on
real bundles without starting a process."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.measure.orchestrate import JobTemplate, OnNode, Orchestrator
from parity.measure.stopping import adaptive_stop
from parity.model.bundle import Bundle
from parity.model.job import Job
from parity.model.side import MeasurePlan
from parity.model.spec import SideSpec, WorkloadSpec
from parity.runner.launch import EventHandler, Launcher
from parity.runner.prepare import prepare_workload
from parity.runner.strategy import Inline

SPEC = WorkloadSpec(name="mlp-train", steps=3)


class Counting(Inline):
    """Inline, counting the jobs it ran."""

    def __init__(self) -> None:
        self.ran = 0

    def run(self, job: Job, path: Path, on_event: EventHandler | None = None) -> Bundle:
        self.ran += 1
        return super().run(job, path, on_event)


@pytest.fixture(scope="module")
def template() -> JobTemplate:
    inline = Inline()
    prepared = prepare_workload(SPEC, launcher=inline, timeout_s=300.0)
    return JobTemplate.of(SPEC, prepared, timeout_s=300.0)


@pytest.mark.slow
def test_rounds_run_inline_into_real_bundles(tmp_path: Path, template: JobTemplate) -> None:
    plan = MeasurePlan(repeats=2)
    with Orchestrator(out=tmp_path, launcher=Counting()) as orch:
        cpu = SideSpec(device="cpu")
        orch.start_budget(template.job("baseline", cpu), template.job("target", cpu))
        stop = orch.rounds(
            lambda role, k: template.job(role, cpu, repeat=k), plan, adaptive_stop(plan)
        )
    assert stop.reason == "repeats", stop.message
    bundles = [b for side in orch.measured.values() for b in side]
    assert len(bundles) == 4 and all(b.ok for b in bundles)
    assert {b.manifest.launch for b in bundles} == {"inline"}
    assert all(b.metrics is not None and b.metrics.step_samples_s for b in bundles)
    # resumed: each complete bundle already there is reused, none run again
    counting = Counting()
    with Orchestrator(out=tmp_path, launcher=counting) as again:
        job = template.job("baseline", cpu, repeat=0)
        reused = again.run(job, tmp_path / "baseline" / "r00", label="baseline r00")
    first = orch.measured["baseline"][0]
    assert counting.ran == 0 and reused.manifest.started_unix == first.manifest.started_unix


def test_a_job_is_launched_where_its_side_runs(tmp_path: Path) -> None:
    """One place chooses: a placed side on its node, every other side by the launcher."""

    class Node:
        def run(self, job: object, final: Path, on_event: object) -> Path:
            raise AssertionError("not run here")

        def take(self) -> object:
            raise AssertionError("not taken here")

        def release(self) -> None:
            pass

    node = Node()
    launcher = Launcher(fork=False)
    orch = Orchestrator(out=tmp_path, launcher=launcher, placed={"target": node})  # type: ignore[dict-item]
    assert orch.launch_for("baseline") is launcher
    chosen = orch.launch_for("target")
    assert isinstance(chosen, OnNode) and chosen.side is node
    orch.close()
