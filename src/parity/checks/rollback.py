"""``parity check rollback``: train on the target, checkpoint, resume on the baseline.

Parts (each a fresh worker process in ``train_ckpt`` mode, on a workload of ``K + M``
steps, so every part loads the same frozen weights and data):

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

from dataclasses import replace
from pathlib import Path
from typing import Any

from parity.bundle import Bundle
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
from parity.errors import UsageError
from parity.judge import quality
from parity.spec import WorkloadSpec
from parity.workloads.base import Workload
from parity.workloads.frozen import freeze


def steps_for(workload: Workload, k: int | None, m: int | None) -> tuple[int, int]:
    """K and M: given, else half of the workload's steps each (at least one)."""
    if workload.kind != "train":
        raise UsageError(
            f"{workload.name} is a {workload.kind} workload: rollback and recovery checkpoint "
            "training, e.g. mlp-train or gpt-train"
        )
    k = k if k is not None else max(1, workload.steps // 2)
    m = m if m is not None else max(1, workload.steps - k)
    if k < 1 or m < 1:
        raise UsageError(f"--k {k} and --m {m} must both be at least 1")
    return k, m


def continuation(
    base: Bundle, resumed: Bundle, start: int, tol: dict[str, float], label: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Gates on the resumed run against the uninterrupted one, from step ``start`` on."""
    lb = list(base.numerics.get("losses") or [])
    lr = list(resumed.numerics.get("losses") or [])
    loss = quality.compare_losses(lb[start:], lr[start:], tol["final_loss_rel"])
    every = loss.get("max_rel") is not None and loss["max_rel"] <= tol["final_loss_rel"]
    gate = {
        **loss,
        "name": f"loss curve from step {start} ({label})",
        "passed": bool(loss["passed"] and every),
        "gated_on": "every step's relative difference within the tolerance",
    }
    if "detail" not in gate:
        gate["detail"] = (
            f"max relative difference {loss['max_rel']:.3g} (tolerance {tol['final_loss_rel']:g})"
            + (
                ""
                if every
                else f"; first step outside: {start + int(loss['first_step_outside_band'])}"
            )
        )
    gates = [gate]
    out_b, out_r = base.outputs(), resumed.outputs()
    for name in sorted(set(out_b) & set(out_r)):
        if out_b[name].is_floating_point():
            check = quality.compare_output(name, out_b[name], out_r[name], tol["outputs_rel_rmse"])
            check["name"] = f"trained model's {name}"
            check.setdefault(
                "detail",
                f"relative RMSE {check.get('rel_rmse', 0.0):.3g} "
                f"(tolerance {tol['outputs_rel_rmse']:g})",
            )
            gates.append(check)
    figures = {
        "continuation_steps": len(lb[start:]),
        "loss_max_rel_diff": loss.get("max_rel"),
        "loss_final_rel_diff": loss.get("final_rel"),
        "loss_tolerance": tol["final_loss_rel"],
        "bitwise_equal_losses": lb[start:] == lr[start:],
        "outputs_rel_rmse": {
            g["name"]: g.get("rel_rmse") for g in gates[1:] if g.get("rel_rmse") is not None
        },
    }
    return gates, figures


def rollback(
    wspec: WorkloadSpec,
    target: str,
    baseline: str,
    *,
    k: int | None = None,
    m: int | None = None,
    out: Path | None = None,
    timeout_s: float = 900.0,
    progress: ProgressFn | None = None,
) -> CheckResult:
    t_side, b_side = check_side(target, "--target"), check_side(baseline, "--baseline")
    workload, wspec = prepare(wspec)
    k, m = steps_for(workload, k, m)
    workload, wspec = prepare(replace(wspec, steps=k + m))
    out = out or default_out("rollback", workload)
    fresh_out(out)
    frozen = freeze(workload)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = (out / CHECKPOINT_DIR).resolve()
    bundles = run_parts(
        [
            Part(name="baseline", side=b_side, settings={"mode": "train_ckpt"}),
            Part(
                name="target",
                side=t_side,
                settings={
                    "mode": "train_ckpt",
                    "stop_at": k,
                    "save_at": k,
                    "checkpoint_dir": str(ckpt),
                },
            ),
        ],
        out,
        wspec,
        frozen,
        timeout_s=timeout_s,
        progress=progress,
        concurrent=all_cpu(t_side, b_side),
    )
    if bundles["target"].ok:
        bundles |= run_parts(
            [resumed_part(b_side, ckpt)],
            out,
            wspec,
            frozen,
            timeout_s=timeout_s,
            progress=progress,
        )
    gates = [parts_ran(bundles)]
    figures: dict[str, Any] = {"k": k, "m": m}
    tol = quality.tolerances(t_side, b_side)
    if gates[0]["passed"]:
        more, fig = continuation(
            bundles["baseline"], bundles["resumed"], k, tol, f"{t_side} -> {b_side}"
        )
        gates += more
        figures |= fig
        hand = quality.compare_losses(
            (bundles["baseline"].numerics.get("losses") or [])[:k],
            bundles["target"].numerics.get("losses") or [],
            tol["final_loss_rel"],
        )
        figures["handover"] = {
            "target_loss_at_k": hand.get("final_target"),
            "baseline_loss_at_k": hand.get("final_baseline"),
            "first_k_max_rel_diff": hand.get("max_rel"),
            "note": "the target's first K steps against the baseline's: reported, not gated",
        }
    evidence = (
        f"parity check rollback: {k} steps of {workload.name} ({wspec.size}) on {t_side}, "
        f"resumed on {b_side} for {m}: loss within {tol['final_loss_rel']:g} at every step "
        f"(max relative difference {figures.get('loss_max_rel_diff') or 0.0:.2g})"
    )
    return finish(
        "rollback",
        out,
        workload=workload,
        wspec=wspec,
        frozen=frozen,
        sides={"target": str(t_side), "baseline": str(b_side)},
        settings={"k": k, "m": m, "steps": k + m, "tolerances": tol},
        gates=gates,
        figures=figures,
        bundles=bundles,
        evidence=evidence,
    )
