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
from dataclasses import replace

import torch

from parity.bundle import Bundle
from parity.model.manifest import FlagValue
from parity.model.ops import OpsCensus
from parity.model.verdict import (
    ErrorDistribution,
    LayerRow,
    Localisation,
    NumericsSection,
    ParameterError,
    ReferenceCheck,
    ReferenceNote,
)
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
    side: SideSpec, flags: Mapping[str, FlagValue] | None = None, *, convolutions: bool = True
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


def runs_convolutions(ops: OpsCensus | None) -> bool:
    """Whether a bundle's op inventory has a convolution (True when it has no inventory)."""
    if ops is None or not ops.inventory:
        return True
    return any(row.op.rsplit(".", 1)[0] in CONV_OPS for row in ops.inventory)


def _rmse(x: torch.Tensor) -> float:
    return float(x.pow(2).mean().sqrt()) if x.numel() else 0.0


def _rel(err: torch.Tensor, ref: torch.Tensor) -> float:
    rms = _rmse(ref)
    value = _rmse(err)
    return value / rms if rms > 0 else (0.0 if value == 0 else math.inf)


def _dist(x: torch.Tensor) -> ErrorDistribution:
    if x.numel() == 0:
        return ErrorDistribution(max=0.0, mean=0.0, p99=0.0)
    return ErrorDistribution(
        max=float(x.max()),
        mean=float(x.mean()),
        p99=float(torch.quantile(x, 0.99)) if x.numel() > 1 else float(x.max()),
    )


def _min_rtol_at(err: torch.Tensor, ref: torch.Tensor, atol: float) -> float:
    """The smallest rtol that passes with ``atol`` fixed."""
    if err.numel() == 0:
        return 0.0
    tiny = torch.finfo(torch.float64).tiny
    return float(((err - atol).clamp_min(0) / ref.abs().clamp_min(tiny)).max())


def gate(
    name: str, t: torch.Tensor, b: torch.Tensor, r: torch.Tensor | None, k: float, tol: float
) -> ReferenceCheck:
    """One output against the reference (or, without one, target against baseline)."""
    t, b = t.double().flatten(), b.double().flatten()

    def fail(detail: str) -> ReferenceCheck:
        return ReferenceCheck(
            name=name, kind="fp64", k=k, tolerance=tol, passed=False, detail=detail
        )

    if t.shape != b.shape or (r is not None and r.numel() != t.numel()):
        return fail("the sides' shapes differ")
    if not bool(torch.isfinite(t).all()):
        return fail("the target's output holds NaN or inf")
    if r is None:
        cos = float(torch.nn.functional.cosine_similarity(t, b, dim=0)) if t.numel() else 1.0
        return ReferenceCheck(
            name=name,
            kind="cosine",
            k=k,
            tolerance=tol,
            passed=cos >= COSINE_MIN,
            cosine=cos,
            detail="no fp64 reference: cosine similarity with the baseline",
        )
    return _against_reference(name, t, b, r.double().flatten(), k, tol)


def _against_reference(
    name: str, t: torch.Tensor, b: torch.Tensor, r: torch.Tensor, k: float, tol: float
) -> ReferenceCheck:
    err_t, err_b = (t - r).abs(), (b - r).abs()
    rmse_t, rmse_b = _rmse(err_t), _rmse(err_b)
    bound = k * rmse_b + tol / 10
    rel = err_t / r.abs().clamp_min(torch.finfo(torch.float64).tiny)
    allclose = bool((err_t <= tol + tol * r.abs()).all())
    return ReferenceCheck(
        name=name,
        kind="fp64",
        k=k,
        tolerance=tol,
        passed=rmse_t <= bound or allclose,
        rmse_target=rmse_t,
        rmse_baseline=rmse_b,
        bound=bound,
        allclose=allclose,
        rule="rmse" if rmse_t <= bound else ("allclose" if allclose else "neither"),
        abs_error=_dist(err_t),
        rel_error=_dist(rel),
        baseline_abs_error=_dist(err_b),
        min_atol=float(err_t.max()) if err_t.numel() else 0.0,
        min_rtol=float(rel.max()) if rel.numel() else 0.0,
        min_rtol_at_atol_tol=_min_rtol_at(err_t, r, tol),
        cosine=float(torch.nn.functional.cosine_similarity(t, r, dim=0)) if t.numel() else 1.0,
        values=t.numel(),
    )


def _layer_errors(
    ref: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor], name: str
) -> tuple[float, float | None]:
    out_key, in_key = f"layer.out.{name}", f"layer.in.{name}"
    out = _rel(tensors[out_key].double() - ref[out_key].double(), ref[out_key].double())
    inp = None
    if in_key in tensors and in_key in ref:
        inp = _rel(tensors[in_key].double() - ref[in_key].double(), ref[in_key].double())
    return out, inp


def localise(a: Bundle, b: Bundle, ref: Bundle, k: float) -> Localisation:
    """The per-module table, the first divergence and the top amplifiers."""
    ta, tb, tr = a.capture_tensors(), b.capture_tensors(), ref.capture_tensors()
    layers = ref.capture.layers if ref.capture is not None else ()
    rows: list[LayerRow] = []
    for layer in layers:
        key = f"layer.out.{layer.name}"
        if key not in ta or key not in tb or key not in tr:
            continue
        err_b, _ = _layer_errors(tr, ta, layer.name)
        err_t, in_t = _layer_errors(tr, tb, layer.name)
        rows.append(
            LayerRow(
                module=layer.name,
                leaf=layer.leaf,
                type=layer.type,
                baseline_error=err_b,
                target_error=err_t,
                target_input_error=in_t,
                amplification=err_t / max(in_t if in_t is not None else 0.0, FLOOR),
                excess=err_t / (k * err_b + FLOOR),
            )
        )
    # containers aggregate their children: localise on leaf modules
    leaf_rows = [row for row in rows if row.leaf]
    first = next((r for r in leaf_rows if r.excess > 1 and r.amplification > GROWTH), None)
    top = sorted((r for r in leaf_rows if r.excess > 1), key=lambda r: -r.amplification)[:TOP]
    return Localisation(
        table=tuple(rows),
        first_divergence=first.module if first else None,
        first_divergence_row=first,
        top_amplification=tuple(r.module for r in top),
        rule=f"first module, in execution order, whose relative error against fp64 exceeds "
        f"{k:g}x the baseline's (+{FLOOR:g}) and is more than {GROWTH:g}x its input's",
    )


def _gradients(
    a: Bundle,
    ta: dict[str, torch.Tensor],
    tb: dict[str, torch.Tensor],
    tr: dict[str, torch.Tensor] | None,
    k: float,
    tol: float,
) -> ReferenceCheck | None:
    names = sorted(n for n in (a.capture.gradients if a.capture else {}) if f"grad.{n}" in tb)
    if not names:
        return None

    def cat(t: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([t[f"grad.{n}"].double() for n in names])

    gref = cat(tr) if tr is not None and all(f"grad.{n}" in tr for n in names) else None
    check = gate("gradients (first backward)", cat(tb), cat(ta), gref, k, tol)
    if tr is None or gref is None:
        return check
    per = [
        (n, _rel(tb[f"grad.{n}"].double() - tr[f"grad.{n}"].double(), tr[f"grad.{n}"].double()))
        for n in names
    ]
    worst = sorted(per, key=lambda x: -x[1])[:TOP]
    return replace(
        check,
        worst_parameters=tuple(ParameterError(parameter=n, rel_error=e) for n, e in worst),
    )


def judge_numerics(a: Bundle, b: Bundle, ref: Bundle | None, target: SideSpec) -> NumericsSection:
    """The numerics section: fp64 gates on outputs and gradients, and localisation."""
    env = b.manifest.environment
    flags = env.device.flags if env is not None else None
    precision = effective_precision(target, flags, convolutions=runs_convolutions(b.ops))
    k, tol = GATES.get(precision, GATES["fp32"])
    head = NumericsSection(precision=precision, k=k, tolerance=tol, available=False)
    if a.capture is None or b.capture is None or a.capture.error or b.capture.error:
        why = (a.capture and a.capture.error) or (b.capture and b.capture.error)
        return replace(head, reason=why or "the sides ran no numerics probe")
    usable = ref is not None and ref.ok and ref.capture is not None and not ref.capture.error
    if ref is None or not usable:
        note = ReferenceNote(available=False, reason="no fp64 reference bundle: cosine fallback")
        ref = None
    else:
        note = ReferenceNote(available=True, bundle=ref.path.name)
    ta, tb = a.capture_tensors(), b.capture_tensors()
    tr = ref.capture_tensors() if ref is not None else None
    gates = [
        replace(
            gate(f"output {name}", tb[key], ta[key], (tr or {}).get(key), k, tol),
            output_kind=summary.kind,  # logits, embeddings...
        )
        for name, summary in sorted(a.capture.outputs.items())
        if (key := f"output.{name}") in ta and key in tb
    ]
    grads = _gradients(a, ta, tb, tr, k, tol)
    if grads is not None:
        gates.append(grads)
    return replace(
        head,
        gates=tuple(gates),
        available=True,
        reference=note,
        passed=all(g.passed for g in gates),
        layers=localise(a, b, ref, k) if ref is not None else None,
    )
