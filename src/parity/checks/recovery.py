"""``parity check recovery``: kill a run after its checkpoint, resume it, compare.

Parts (fresh workers in ``train_ckpt`` mode on a workload of ``K + M`` steps):

``uninterrupted``  the side's ``K + M`` steps
``killed``         the same side, checkpointing after step ``K``; the parent sends SIGKILL
                   as soon as the worker reports the checkpoint in ``events.jsonl``
``resumed``        a fresh process loads the checkpoint and runs steps ``K ..``

The gates: the kill happened after a verified checkpoint at step ``K``, and the resumed
curve continues as the uninterrupted one does (every step within the loss tolerance).
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from parity.checks import common
from parity.errors import CheckpointError
from parity.measure.orchestrate import ProgressSink
from parity.model import checks as results
from parity.model.job import CheckpointPlan, Event
from parity.request import CheckRequest

AWAIT_KILL_S = 120.0


class Killer:
    """Sends SIGKILL to the worker once it reports its checkpoint (an event hook)."""

    def __init__(self, final: Path) -> None:
        self.final = final
        self.last_done = 0
        self.checkpoint_step: int | None = None
        self.killed_after: int | None = None

    def __call__(self, event: Event) -> None:
        if event.event == "progress" and event.done is not None:
            self.last_done = max(self.last_done, event.done)
        if event.event != "checkpoint" or self.killed_after is not None or event.pid is None:
            return
        self.checkpoint_step = event.step
        if self._ours(event.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(event.pid, signal.SIGKILL)  # the worker leads its own session
                self.killed_after = self.last_done

    def _ours(self, pid: int) -> bool:
        """The pid is still this part's worker (Linux: its stdout is this part's log relay,
        whose FIFO is named after the bundle being written; forked or spawned, every
        worker's is)."""
        try:
            stdout = os.readlink(f"/proc/{pid}/fd/1")
        except FileNotFoundError:
            return not Path("/proc/self").exists()  # no /proc: the worker is still polled
        except OSError:
            return False
        return f".{self.final.name}.tmp-" in stdout

    def kill(self) -> results.Kill:
        return results.Kill(
            signal="SIGKILL",
            by="the parent, on the worker's checkpoint event",
            sent_after_step=self.killed_after,
            last_step_reported=self.last_done,
            steps_lost=None
            if self.killed_after is None
            else max(0, self.last_done - (self.checkpoint_step or 0)),
        )


def _saved_step(checkpoint: Path) -> tuple[int | None, str]:
    from parity.runner.checkpoint import read_meta

    try:
        return int(read_meta(checkpoint).step), ""
    except CheckpointError as exc:
        return None, f"; checkpoint: {exc}"


def recovery(request: CheckRequest, *, progress: ProgressSink | None = None) -> results.CheckResult:
    run = common.start(request, progress)
    k, m = run.k, run.m
    side, t = request.target, run.template
    killer = Killer(run.out / "killed")
    plan = CheckpointPlan(
        save_at=k,
        checkpoint_dir=str(run.checkpoint),
        await_kill_s=min(AWAIT_KILL_S, request.timeout_s / 2),
    )
    bundles = common.train(
        run,
        [
            common.Training("uninterrupted", side, CheckpointPlan()),
            common.Training("killed", side, plan, hook=killer),
        ],
    )
    killed = bundles["killed"]
    saved, note = _saved_step(run.checkpoint)
    reason = (killed.manifest.reason or killed.status) + note
    kill_ok = killer.killed_after is not None and not killed.ok and "SIGKILL" in reason
    kill_gate = results.Gate(
        name=f"killed after the checkpoint at step {k}",
        passed=kill_ok and saved == k,
        detail=(
            f"SIGKILL sent when step {killer.killed_after} was reported; the worker last "
            f"reported step {killer.last_done}; checkpoint at step {saved} verified"
            if kill_ok and saved == k
            else f"the run was not killed as planned: {reason}"
        ),
    )
    if kill_gate.passed:
        bundles["resumed"] = common.resume(run, side)
    gates: list[results.CheckGate] = [
        common.parts_ran(bundles, expected_failed=("killed",)),
        kill_gate,
    ]
    tol = common.loss_tolerances(request)
    figures = results.CheckFigures(k=k, m=m, kill=killer.kill())
    if all(g.passed for g in gates):
        more, cont = common.continuation(
            bundles["uninterrupted"], bundles["resumed"], k, tol, str(side)
        )
        gates += more
        figures = results.CheckFigures(k=k, m=m, kill=killer.kill(), continuation=cont)
    worst = figures.continuation.loss_max_rel_diff if figures.continuation else None
    evidence = (
        f"parity check recovery: {t.description.name} ({t.workload.size}) on {side} killed "
        f"with SIGKILL after its checkpoint at step {k}, resumed in a fresh process for {m} "
        f"steps: loss within {tol['final_loss_rel']:g} at every step (max relative "
        f"difference {worst or 0.0:.2g})"
    )
    return common.finish(
        run,
        sides=results.CheckSides(device=side),
        settings=results.CheckSettings(k=k, m=m, steps=k + m, tolerances=tol),
        gates=gates,
        figures=figures,
        bundles=bundles,
        evidence=evidence,
    )
