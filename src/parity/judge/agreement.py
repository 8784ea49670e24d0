"""Agreement with the baseline by what an output means: generated tokens, classifier and
LM logits (top-1), embeddings (cosine similarity).

- **Tokens**: the share of generated tokens that match the baseline's, and per row the
  first position where they differ, with the top-2 logits margin there (the smaller of
  the two sides'; the runner records it on a replay of the first batch). Greedy decoding
  flips on near-ties: a row whose first difference falls on a margin within the
  *margin threshold* is no fault; any other difference fails.
- **Top-1** (outputs of kind ``logits``): the share of rows (the last dimension is the
  class or vocabulary) whose arg-max agrees, among the rows whose baseline top-2 margin
  is beyond the margin threshold, at least ``min_top1``.
- **Cosine** (outputs of kind ``embeddings``): the smallest per-row cosine similarity, at
  least ``min_cosine``.

The margin threshold is ``2 k eps + tol``: ``eps`` the largest absolute logits error that
the comparator (the baseline, or the expected-error run at the target's precision) makes
against fp64, so a flip within what two such runs can perturb is a near-tie; without a
reference, ``tol`` times the largest absolute logit (the precision's relative rounding).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import torch

from parity.judge.tolerances import Tolerance
from parity.model.bundle import Bundle
from parity.model.numerics import OutputKind, output_kind
from parity.model.quality import AgreementCheck, QualityCheck, TokensCheck

Tensors = dict[str, torch.Tensor]


def _kind(bundle: Bundle, name: str, tensor: torch.Tensor) -> OutputKind:
    summary = bundle.outputs.outputs.get(name) if bundle.outputs is not None else None
    if summary is not None and summary.kind is not None:
        return summary.kind
    return output_kind(name, floating=tensor.is_floating_point())


def _max_abs(x: torch.Tensor, y: torch.Tensor) -> float:
    if x.shape != y.shape or x.numel() == 0:
        return 0.0
    diff = (x.double() - y.double()).abs()
    return float(diff[torch.isfinite(diff)].max()) if bool(torch.isfinite(diff).any()) else 0.0


def logit_noise(a: Bundle, ref: Bundle | None, exp: Bundle | None, tol: float) -> float:
    """``eps`` of the margin threshold (see the module's docstring), over every logits
    output of the baseline ``a``."""
    ta = a.output_tensors()
    names = [n for n, t in ta.items() if _kind(a, n, t) == "logits"]
    if ref is None or ref.outputs is None:
        return max((tol * float(ta[n].double().abs().max()) for n in names), default=0.0)
    tr = ref.output_tensors()
    te = exp.output_tensors() if exp is not None else {}
    return max(
        (
            max(_max_abs(ta[n], tr[n]), _max_abs(te[n], tr[n]) if n in te else 0.0)
            for n in names
            if n in tr
        ),
        default=0.0,
    )


def tokens_check(
    name: str,
    base: torch.Tensor,
    target: torch.Tensor,
    margins: tuple[torch.Tensor, torch.Tensor] | None,
    threshold: float,
) -> TokensCheck:
    """Generated tokens against the baseline's, each row's first difference and its margin."""
    label = f"output {name}"
    if base.shape != target.shape:
        detail = f"shapes differ: {list(base.shape)} vs {list(target.shape)}"
        return TokensCheck(name=label, passed=False, detail=detail, output_kind="tokens")
    same = (base == target).reshape(base.shape[0], -1) if base.dim() > 1 else (base == target)
    rows = same if same.dim() > 1 else same.reshape(1, -1)
    first = tuple(int((~r).nonzero()[0]) if not bool(r.all()) else None for r in rows)
    agreement = float(same.float().mean()) if same.numel() else 1.0
    check = TokensCheck(
        name=label, passed=True, agreement=agreement, first_difference=first, output_kind="tokens"
    )
    if all(p is None for p in first):
        return check
    if margins is None or margins[0].shape != rows.shape or margins[1].shape != rows.shape:
        detail = "no logits margins recorded: the first differences are reported, not gated"
        return TokensCheck(
            name=label,
            gated=False,
            passed=None,
            agreement=agreement,
            first_difference=first,
            detail=detail,
            output_kind="tokens",
        )
    at = tuple(
        None if p is None else float(torch.minimum(margins[0][i, p], margins[1][i, p]))
        for i, p in enumerate(first)
    )
    ties = [m is not None and m <= threshold for m in at]
    flips = sum(1 for p, tie in zip(first, ties, strict=True) if p is not None and not tie)
    detail = (
        "every first difference is a near-tie flip (greedy decoding; not a fault)"
        if flips == 0
        else f"{flips} row(s) first differ where the top-2 margin exceeds {threshold:.3g}"
    )
    return TokensCheck(
        name=label,
        passed=flips == 0,
        agreement=agreement,
        first_difference=first,
        margins=at,
        margin_threshold=threshold,
        near_ties=sum(ties),
        detail=detail,
        output_kind="tokens",
    )


def _rows(t: torch.Tensor) -> torch.Tensor:
    t = t.double()
    return t.reshape(-1, t.shape[-1]) if t.dim() > 1 else t.reshape(1, -1)


def top1_check(
    name: str, base: torch.Tensor, target: torch.Tensor, threshold: float, minimum: float
) -> AgreementCheck:
    """Top-1 agreement of logits rows, among rows beyond a near-tie."""
    b, t = _rows(base), _rows(target)
    head = AgreementCheck(
        name=f"top-1 {name}", passed=False, metric="top1", threshold=minimum, output_kind="logits"
    )
    if b.shape != t.shape or b.shape[-1] < 2:
        detail = "shapes differ" if b.shape != t.shape else "one class: nothing to rank"
        return replace(head, passed=None, gated=False, detail=detail)
    agree = b.argmax(-1) == t.argmax(-1)
    top2 = b.topk(2, dim=-1).values
    decisive = (top2[:, 0] - top2[:, 1]) > threshold
    value = float(agree[decisive].double().mean()) if bool(decisive.any()) else 1.0
    return AgreementCheck(
        name=head.name,
        passed=value >= minimum,
        metric="top1",
        value=value,
        threshold=minimum,
        rows=int(b.shape[0]),
        agreement=float(agree.double().mean()),
        near_ties=int((~decisive).sum()),
        margin_threshold=threshold,
        output_kind="logits",
        detail=None if bool(decisive.any()) else "every row is a near-tie: nothing decisive",
    )


def cosine_check(
    name: str, base: torch.Tensor, target: torch.Tensor, minimum: float
) -> AgreementCheck:
    """The smallest per-row cosine similarity of embeddings with the baseline's."""
    b, t = _rows(base), _rows(target)
    if b.shape != t.shape:
        return AgreementCheck(
            name=f"cosine {name}",
            passed=False,
            metric="cosine",
            threshold=minimum,
            detail="shapes differ",
        )
    cos = torch.nn.functional.cosine_similarity(b, t, dim=-1)
    value = float(cos.min()) if cos.numel() and bool(torch.isfinite(cos).all()) else 0.0
    return AgreementCheck(
        name=f"cosine {name}",
        passed=value >= minimum,
        metric="cosine",
        value=value,
        threshold=minimum,
        rows=int(b.shape[0]),
        output_kind="embeddings",
    )


def agreement_checks(
    a: Bundle,
    b: Bundle,
    ref: Bundle | None,
    exp: Bundle | None,
    row: Tolerance,
    minimum: Mapping[str, float],
) -> list[QualityCheck]:
    """Tokens, top-1 and cosine checks of every output both sides produced."""
    ta, tb = a.output_tensors(), b.output_tensors()
    ma, mb = a.margin_tensors(), b.margin_tensors()
    checks: list[QualityCheck] = []
    noise: float | None = None
    for name in sorted(set(ta) & set(tb)):
        kind = _kind(a, name, ta[name])
        if kind in ("tokens", "logits"):
            noise = logit_noise(a, ref, exp, row.tol) if noise is None else noise
            threshold = 2 * row.k * noise + row.tol
        if kind == "tokens":
            pair = (ma[name], mb[name]) if name in ma and name in mb else None
            checks.append(tokens_check(name, ta[name], tb[name], pair, threshold))
        elif kind == "logits":
            checks.append(top1_check(name, ta[name], tb[name], threshold, minimum["top1"]))
        elif kind == "embeddings":
            checks.append(cosine_check(name, ta[name], tb[name], minimum["cosine"]))
    return checks
