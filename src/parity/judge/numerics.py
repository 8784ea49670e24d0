"""Numerics against an fp64 reference: output gates, gradients, the first diverging layer.

The gate (TorchBench / Dynamo ``same``): the target passes an output when

    rmse(target, fp64) <= k * rmse(baseline, fp64) + tol / 10

with k = 2 for fp32 and 3 for reduced precision, or when ``allclose(target, fp64,
atol=tol, rtol=tol)`` holds; ``tol`` is set by the format the target's matmuls and
convolutions ran in (:func:`effective_precision`: TF32 where its device flags say so). Where no
fp64 value exists, cosine similarity >= 0.99 is the fallback. Each gate reports the error
distribution and the smallest atol (at rtol 0) and rtol (at atol 0) that would pass.

Localisation compares every module's output with the reference, in execution order:
the first divergence is the first module whose relative error exceeds k times the
baseline's (plus a floor) and grew more than ``GROWTH`` times beyond the error its input
carried. The top modules by error amplification (output error over input error) follow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from parity.bundle import Bundle
from parity.spec import SideSpec

#: precision -> (k, tol)
GATES = {"fp32": (2.0, 1e-4), "tf32": (2.0, 1e-3), "fp16": (3.0, 1e-3), "bf16": (3.0, 1e-2)}
GROWTH = 2.0
FLOOR = 1e-6
COSINE_MIN = 0.99
TOP = 5


#: ATen ops (overload packets, as the op scan names them) that run a convolution
CONV_OPS = frozenset(
    f"aten::{name}"
    for name in (
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "convolution",
        "_convolution",
        "convolution_backward",
        "cudnn_convolution",
        "cudnn_convolution_transpose",
    )
)


def effective_precision(
    side: SideSpec, flags: Mapping[str, Any] | None = None, *, convolutions: bool = True
) -> str:
    """The format the side's matmuls and convolutions effectively run in.

    A reduced precision or an emulation profile says so itself. An fp32 side is tf32 when
    its recorded device flags say fp32 matmuls run in TF32, or fp32 convolutions do (cuDNN's
    default on CUDA) and the run has convolutions (``convolutions``: True when unknown)."""
    if side.precision != "fp32":
        return side.precision
    if side.emulate:
        return side.emulate.removeprefix("matmul-")
    flags = flags or {}
    if flags.get("matmul_fp32_math") == "tf32":
        return "tf32"
    if convolutions and flags.get("conv_fp32_math") == "tf32":
        return "tf32"
    return "fp32"


def runs_convolutions(ops: Mapping[str, Any]) -> bool:
    """Whether a bundle's op inventory has a convolution (True when it has no inventory)."""
    inventory = ops.get("inventory")
    if not inventory:
        return True
    return any(str(row.get("op", "")).rsplit(".", 1)[0] in CONV_OPS for row in inventory)


def _rmse(x: torch.Tensor) -> float:
    return float(x.pow(2).mean().sqrt()) if x.numel() else 0.0


def _rel(err: torch.Tensor, ref: torch.Tensor) -> float:
    rms = _rmse(ref)
    value = _rmse(err)
    return value / rms if rms > 0 else (0.0 if value == 0 else math.inf)


def _dist(x: torch.Tensor) -> dict[str, float]:
    if x.numel() == 0:
        return {"max": 0.0, "mean": 0.0, "p99": 0.0}
    return {
        "max": float(x.max()),
        "mean": float(x.mean()),
        "p99": float(torch.quantile(x, 0.99)) if x.numel() > 1 else float(x.max()),
    }


def _min_rtol_at(err: torch.Tensor, ref: torch.Tensor, atol: float) -> float:
    """The smallest rtol that passes with ``atol`` fixed."""
    if err.numel() == 0:
        return 0.0
    tiny = torch.finfo(torch.float64).tiny
    return float(((err - atol).clamp_min(0) / ref.abs().clamp_min(tiny)).max())


def gate(
    name: str, t: torch.Tensor, b: torch.Tensor, r: torch.Tensor | None, k: float, tol: float
) -> dict[str, Any]:
    """One output against the reference (or, without one, target against baseline)."""
    t, b = t.double().flatten(), b.double().flatten()
    check: dict[str, Any] = {"name": name, "kind": "fp64", "gated": True, "k": k, "tolerance": tol}
    if t.shape != b.shape or (r is not None and r.numel() != t.numel()):
        return {**check, "passed": False, "detail": "the sides' shapes differ"}
    if not bool(torch.isfinite(t).all()):
        return {**check, "passed": False, "detail": "the target's output holds NaN or inf"}
    if r is None:
        cos = float(torch.nn.functional.cosine_similarity(t, b, dim=0)) if t.numel() else 1.0
        return {
            **check,
            "kind": "cosine",
            "passed": cos >= COSINE_MIN,
            "cosine": cos,
            "detail": "no fp64 reference: cosine similarity with the baseline",
        }
    r = r.double().flatten()
    err_t, err_b = (t - r).abs(), (b - r).abs()
    rmse_t, rmse_b = _rmse(err_t), _rmse(err_b)
    bound = k * rmse_b + tol / 10
    rel = err_t / r.abs().clamp_min(torch.finfo(torch.float64).tiny)
    allclose = bool((err_t <= tol + tol * r.abs()).all())
    passed = rmse_t <= bound or allclose
    return {
        **check,
        "passed": passed,
        "rmse_target": rmse_t,
        "rmse_baseline": rmse_b,
        "bound": bound,
        "allclose": allclose,
        "rule": "rmse" if rmse_t <= bound else ("allclose" if allclose else "neither"),
        "abs_error": _dist(err_t),
        "rel_error": _dist(rel),
        "baseline_abs_error": _dist(err_b),
        "min_atol": float(err_t.max()) if err_t.numel() else 0.0,
        "min_rtol": float(rel.max()) if rel.numel() else 0.0,
        "min_rtol_at_atol_tol": _min_rtol_at(err_t, r, tol),
        "cosine": float(torch.nn.functional.cosine_similarity(t, r, dim=0)) if t.numel() else 1.0,
        "values": t.numel(),
    }


def _layer_errors(
    bundle: Bundle, ref: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor], name: str
) -> tuple[float, float | None]:
    out = _rel(
        tensors[f"layer.out.{name}"].double() - ref[f"layer.out.{name}"].double(),
        ref[f"layer.out.{name}"].double(),
    )
    key = f"layer.in.{name}"
    inp = None
    if key in tensors and key in ref:
        inp = _rel(tensors[key].double() - ref[key].double(), ref[key].double())
    return out, inp


def localise(a: Bundle, b: Bundle, ref: Bundle, k: float) -> dict[str, Any]:
    """The per-module table, the first divergence and the top amplifiers."""
    ta, tb, tr = a.capture_tensors(), b.capture_tensors(), ref.capture_tensors()
    order = [layer["name"] for layer in ref.capture.get("layers", [])]
    rows: list[dict[str, Any]] = []
    types = {layer["name"]: layer["type"] for layer in ref.capture.get("layers", [])}
    leaves = {layer["name"] for layer in ref.capture.get("layers", []) if layer.get("leaf", True)}
    for name in order:
        key = f"layer.out.{name}"
        if key not in ta or key not in tb or key not in tr:
            continue
        err_b, _ = _layer_errors(a, tr, ta, name)
        err_t, in_t = _layer_errors(b, tr, tb, name)
        growth = err_t / max(in_t if in_t is not None else 0.0, FLOOR)
        rows.append(
            {
                "module": name,
                "leaf": name in leaves,
                "type": types.get(name),
                "baseline_error": err_b,
                "target_error": err_t,
                "target_input_error": in_t,
                "amplification": growth,
                "excess": err_t / (k * err_b + FLOOR),
            }
        )
    # containers aggregate their children: localise on leaf modules
    leaf_rows = [row for row in rows if row["leaf"]]
    first = next((r for r in leaf_rows if r["excess"] > 1 and r["amplification"] > GROWTH), None)
    top = sorted((r for r in leaf_rows if r["excess"] > 1), key=lambda r: -r["amplification"])
    top = top[:TOP]
    return {
        "table": rows,
        "first_divergence": first["module"] if first else None,
        "first_divergence_row": first,
        "top_amplification": [r["module"] for r in top],
        "rule": f"first module, in execution order, whose relative error against fp64 exceeds "
        f"{k:g}x the baseline's (+{FLOOR:g}) and is more than {GROWTH:g}x its input's",
    }


def judge_numerics(a: Bundle, b: Bundle, ref: Bundle | None, target: SideSpec) -> dict[str, Any]:
    """The numerics section: fp64 gates on outputs and gradients, and localisation."""
    flags = b.manifest.get("environment", {}).get("device", {}).get("flags")
    precision = effective_precision(target, flags, convolutions=runs_convolutions(b.ops))
    k, tol = GATES.get(precision, GATES["fp32"])
    section: dict[str, Any] = {"precision": precision, "k": k, "tolerance": tol, "gates": []}
    if not a.capture or not b.capture or "error" in a.capture or "error" in b.capture:
        why = (a.capture or b.capture).get("error", "the sides ran no numerics probe")
        return {**section, "available": False, "reason": why}
    if ref is None or not ref.ok or not ref.capture or "error" in ref.capture:
        section["reference"] = {
            "available": False,
            "reason": "no fp64 reference bundle: cosine fallback",
        }
        ref = None
    else:
        section["reference"] = {"available": True, "bundle": ref.path.name}
    ta, tb = a.capture_tensors(), b.capture_tensors()
    tr = ref.capture_tensors() if ref is not None else {}
    for name in sorted(a.capture.get("outputs", {})):
        key = f"output.{name}"
        if key in ta and key in tb:
            section["gates"].append(gate(f"output {name}", tb[key], ta[key], tr.get(key), k, tol))
    grads = sorted(n for n in a.capture.get("gradients", {}) if f"grad.{n}" in tb)
    if grads:

        def cat(t: dict[str, torch.Tensor]) -> torch.Tensor:
            return torch.cat([t[f"grad.{n}"].double() for n in grads])

        gref = cat(tr) if ref is not None and all(f"grad.{n}" in tr for n in grads) else None
        g = gate("gradients (first backward)", cat(tb), cat(ta), gref, k, tol)
        if gref is not None:
            per = [
                (
                    n,
                    _rel(
                        tb[f"grad.{n}"].double() - tr[f"grad.{n}"].double(),
                        tr[f"grad.{n}"].double(),
                    ),
                )
                for n in grads
            ]
            g["worst_parameters"] = [
                {"parameter": n, "rel_error": e} for n, e in sorted(per, key=lambda x: -x[1])[:TOP]
            ]
        section["gates"].append(g)
    section["available"] = True
    section["passed"] = all(g["passed"] for g in section["gates"])
    if ref is not None:
        section["layers"] = localise(a, b, ref, k)
    return section
