"""``parity check recovery``: kill a run after its checkpoint, resume it, compare.

Parts (fresh worker processes in ``train_ckpt`` mode, workload of ``K + M`` steps):

``uninterrupted``  the side's ``K + M`` steps
``killed``         the same run, saving a checkpoint after step ``K``; it reports the
                   checkpoint through ``events.jsonl`` and trains on, and **the parent
                   sends SIGKILL to its process group** as soon as it reads that event
                   (the worker never finishes on its own: after its last step it waits to
                   be killed). Its bundle is recorded as failed (killed by SIGKILL).
``resumed``        a fresh process loads the checkpoint and runs steps ``K .. K+M-1``

The gate: the kill landed after the checkpoint and left a verifiable checkpoint (sha256),
and the resumed curve from step ``K`` on stays within the side's loss tolerance at every
step, with the trained model's outputs within the output tolerance.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any

from parity.checks.common import (
    CHECKPOINT_DIR,
    CheckResult,
    Part,
    ProgressFn,
    all_cpu,
    check_side,
    default_out,
    finish,
    fresh_out,
    parts_ran,
    prepare,
    resumed_part,
    run_parts,
)
from parity.checks.rollback import continuation, steps_for
from parity.judge import quality
from parity.runner.checkpoint import CheckpointError, read_meta
from parity.spec import WorkloadSpec
from parity.workloads.frozen import freeze

AWAIT_KILL_S = 120.0


class Killer:
    """Sends SIGKILL to the worker once it reports its checkpoint (an ``on_event`` hook)."""

    def __init__(self, final: Path) -> None:
        self.final = final
        self.last_done = 0
        self.checkpoint_step: int | None = None
        self.killed_after: int | None = None

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("event") == "progress":
            self.last_done = max(self.last_done, int(event.get("done") or 0))
        if event.get("event") != "checkpoint" or self.killed_after is not None:
            return
        self.checkpoint_step = int(event["step"])
        pid = int(event["pid"])
        if self._ours(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # the worker leads its own session
                self.killed_after = self.last_done

    def _ours(self, pid: int) -> bool:
        """The pid is still this part's worker (Linux: its command line names its bundle)."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            return not Path("/proc/self").exists()  # no /proc: the worker is still polled
        except OSError:
            return False
        return b"parity.runner.worker" in cmdline and f".{self.final.name}.tmp-".encode() in cmdline


def recovery(
    wspec: WorkloadSpec,
    device: str,
    *,
    k: int | None = None,
    m: int | None = None,
    out: Path | None = None,
    timeout_s: float = 900.0,
    progress: ProgressFn | None = None,
) -> CheckResult:
    side = check_side(device, "--device")
    workload, wspec = prepare(wspec)
    k, m = steps_for(workload, k, m)
    workload, wspec = prepare(replace(wspec, steps=k + m))
    out = out or default_out("recovery", workload)
    fresh_out(out)
    frozen = freeze(workload)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = (out / CHECKPOINT_DIR).resolve()
    killer = Killer(out / "killed")
    killed_settings = {
        "mode": "train_ckpt",
        "save_at": k,
        "checkpoint_dir": str(ckpt),
        "await_kill_s": min(AWAIT_KILL_S, timeout_s / 2),
    }
    bundles = run_parts(
        [
            Part(name="uninterrupted", side=side, settings={"mode": "train_ckpt"}),
            Part(name="killed", side=side, settings=killed_settings, on_event=killer),
        ],
        out,
        wspec,
        frozen,
        timeout_s=timeout_s,
        progress=progress,
        concurrent=all_cpu(side),
    )
    killed = bundles["killed"]
    reason = str(killed.manifest.get("reason") or "")
    try:
        saved_step: int | None = read_meta(ckpt).step
    except CheckpointError as exc:
        saved_step, reason = None, f"{reason}; checkpoint: {exc}"
    kill_ok = killer.killed_after is not None and not killed.ok and "SIGKILL" in reason
    kill_gate = {
        "name": f"killed after the checkpoint at step {k}",
        "passed": kill_ok and saved_step == k,
        "detail": (
            f"SIGKILL sent when step {killer.killed_after} was reported; the worker last "
            f"reported step {killer.last_done}; checkpoint at step {saved_step} verified"
            if kill_ok and saved_step == k
            else f"the run was not killed as planned: {reason or killed.status}"
        ),
    }
    if kill_gate["passed"]:
        bundles |= run_parts(
            [resumed_part(side, ckpt)],
            out,
            wspec,
            frozen,
            timeout_s=timeout_s,
            progress=progress,
        )
    gates = [parts_ran(bundles, expected_failed=("killed",)), kill_gate]
    figures: dict[str, Any] = {
        "k": k,
        "m": m,
        "kill": {
            "signal": "SIGKILL",
            "by": "the parent, on the worker's checkpoint event",
            "sent_after_step": killer.killed_after,
            "last_step_reported": killer.last_done,
            "steps_lost": max(0, killer.last_done - k) if killer.killed_after is not None else None,
        },
    }
    tol = quality.tolerances(side, side)
    if all(g["passed"] for g in gates):
        more, fig = continuation(bundles["uninterrupted"], bundles["resumed"], k, tol, str(side))
        gates += more
        figures |= fig
    evidence = (
        f"parity check recovery: {workload.name} ({wspec.size}) on {side} killed with SIGKILL "
        f"after its checkpoint at step {k}, resumed in a fresh process for {m} steps: loss "
        f"within {tol['final_loss_rel']:g} at every step "
        f"(max relative difference {figures.get('loss_max_rel_diff') or 0.0:.2g})"
    )
    return finish(
        "recovery",
        out,
        workload=workload,
        wspec=wspec,
        frozen=frozen,
        sides={"device": str(side)},
        settings={"k": k, "m": m, "steps": k + m, "tolerances": tol},
        gates=gates,
        figures=figures,
        bundles=bundles,
        evidence=evidence,
    )
