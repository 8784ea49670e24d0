"""``parity check rollback``: train on the target, checkpoint, resume on the baseline.

Parts (each a fresh worker in ``train_ckpt`` mode, on a workload of ``K + M`` steps, so
every part loads the same frozen weights and data):

``baseline``  the baseline's uninterrupted ``K + M`` steps
``target``    the target's first ``K`` steps, then a checkpoint (``checkpoint/``:
              safetensors and JSON, see ``parity.runner.checkpoint``)
``resumed``   the baseline loads that checkpoint and runs steps ``K .. K+M-1``

The gate: the resumed curve's steps ``K ..`` against the baseline's, every step within the
loss tolerance of the two sides' precision (``judge.quality.tolerances``), and the trained
model's outputs within the output tolerance. The target's first ``K`` steps against the
baseline's are reported (the handover), not gated: ``parity compare`` judges those.
"""

from __future__ import annotations

from parity.checks import common
from parity.judge import quality
from parity.measure.orchestrate import ProgressSink
from parity.model import checks as results
from parity.model.job import CheckpointPlan
from parity.request import CheckRequest


def rollback(request: CheckRequest, *, progress: ProgressSink | None = None) -> results.CheckResult:
    run = common.start(request, progress)
    k, m = run.k, run.m
    target, baseline = request.target, request.baseline or request.target
    t = run.template
    ckpt = CheckpointPlan(stop_at=k, save_at=k, checkpoint_dir=str(run.checkpoint))
    bundles = common.train(
        run,
        [
            common.Training("baseline", baseline, CheckpointPlan()),
            common.Training("target", target, ckpt),
        ],
    )
    if bundles["target"].ok:
        bundles["resumed"] = common.resume(run, baseline)
    tol = common.loss_tolerances(request)
    gates: list[results.CheckGate] = [common.parts_ran(bundles)]
    figures = results.CheckFigures(k=k, m=m)
    if gates[0].passed:
        more, cont = common.continuation(
            bundles["baseline"], bundles["resumed"], k, tol, f"{target} -> {baseline}"
        )
        gates += more
        hand = quality.compare_losses(
            list(bundles["baseline"].losses)[:k],
            list(bundles["target"].losses),
            tol["final_loss_rel"],
        )
        figures = results.CheckFigures(
            k=k,
            m=m,
            continuation=cont,
            handover=results.Handover(
                target_loss_at_k=hand.final_target,
                baseline_loss_at_k=hand.final_baseline,
                first_k_max_rel_diff=hand.max_rel,
                note="the target's first K steps against the baseline's: reported, not gated",
            ),
        )
    worst = figures.continuation.loss_max_rel_diff if figures.continuation else None
    evidence = (
        f"parity check rollback: {k} steps of {t.description.name} ({t.workload.size}) on "
        f"{target}, resumed on {baseline} for {m}: loss within {tol['final_loss_rel']:g} at "
        f"every step (max relative difference {worst or 0.0:.2g})"
    )
    return common.finish(
        run,
        sides=results.CheckSides(target=target, baseline=baseline),
        settings=results.CheckSettings(k=k, m=m, steps=k + m, tolerances=tol),
        gates=gates,
        figures=figures,
        bundles=bundles,
        evidence=evidence,
    )
