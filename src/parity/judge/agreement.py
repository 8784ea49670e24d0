"""Agreement with the baseline by what an output means: generated tokens, classifier and
LM logits (top-1), embeddings (cosine similarity).

- **Tokens**: every prompt's generated tokens against the baseline's. A prompt is
  compared up to and including its first difference; after it the two sides decode from
  different contexts. Where the target scored the baseline's tokens teacher-forced
  (``every_forced``: the comparison hands them to the target's quality run), its later
  tokens are its predictions on the baseline's context, compared one by one, so one flip
  does not count every later token as a difference; otherwise they are counted as not
  compared. A difference is a near-tie flip (no fault) only where the baseline's own
  top-2 logits margin there is under the near-tie margin; any other fails.
- **Top-1** (outputs of kind ``logits``, and ``every_top1``: the arg-max at every position
  of every prompt, teacher-forced; on the baseline's tokens at every position where the
  target scored them, else up to each prompt's first difference): the share of
  *decisive* rows (the baseline's top-2 margin beyond the near-tie margin) whose arg-max
  agrees, at least ``min_top1``. A gate with fewer decisive rows than
  :func:`required_rows` is not decided (never a pass), unless its flips already put the
  agreement's upper bound under the minimum: a failure.
- **Cosine** (outputs of kind ``embeddings``, and ``every_sketch``: a sketch of the
  logits at every position of every prompt, see :mod:`parity.sketch`): the smallest
  per-row cosine similarity, at least ``min_cosine``; at every position, over the rows
  where both sides saw the same context (as top-1), read from the sketches.

The near-tie margin (:func:`near_tie_margin`) is ``2 (e_base + e_target)``: ``e_base`` the
largest absolute logit error of the baseline against fp64, ``e_target`` that of the
expected-error run (the workload on the CPU at the target's precision; the baseline's
where there is none), over every logits output. Two logits' gap moves by at most twice
the largest error of each, so a flip on a smaller margin is within what the two
precisions can do. Without an fp64 reference, each error is ``tol`` times the largest
absolute logit (the precision's relative rounding).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from parity.arrays import Array, Arrays, cosine_similarity, f64, floating
from parity.judge.quality import found
from parity.judge.tolerances import Tolerance
from parity.model.bundle import Bundle
from parity.model.inputs import Minimums
from parity.model.numerics import (
    EVERY_FORCED,
    EVERY_FORCED_SKETCH,
    EVERY_SKETCH,
    EVERY_TOKENS,
    EVERY_TOP1,
    FINAL,
    OutputKind,
    output_kind,
)
from parity.model.quality import AgreementCheck, Divergence, QualityCheck, TokensCheck
from parity.sketch import DIMS, cosine
from parity.stats import proportion
from parity.stats.proportion import upper_bound

#: the one-sided error rate of the Clopper-Pearson bound behind ``required_rows``
ALPHA = 0.05
#: the first batch's outputs that the every-prompt outputs cover
COVERED = frozenset({"tokens", "final_tokens", "prefill_logits", "final_prefill_logits"})


def required_rows(minimum: float, alpha: float = ALPHA) -> int:
    """The fewest decisive rows that can tell ``minimum`` from chance
    (:func:`parity.stats.proportion.required_rows`: 299 rows for 99%, 59 for 95%)."""
    return proportion.required_rows(minimum, alpha)


def _kind(bundle: Bundle, name: str, tensor: Array) -> OutputKind:
    summary = bundle.outputs.outputs.get(name) if bundle.outputs is not None else None
    if summary is not None and summary.kind is not None:
        return summary.kind
    return output_kind(name, floating=floating(tensor))


def _max_abs(x: Array, y: Array) -> float:
    if x.shape != y.shape or x.size == 0:
        return 0.0
    diff = np.abs(f64(x) - f64(y))
    finite = np.isfinite(diff)
    return float(diff[finite].max()) if bool(finite.any()) else 0.0


def near_tie_margin(a: Bundle, ref: Bundle | None, exp: Bundle | None, tol: float) -> float:
    """The near-tie margin ``2 (e_base + e_target)`` (see the module's docstring)."""
    ta = a.output_tensors()
    names = [n for n, t in ta.items() if floating(t) and _kind(a, n, t) == "logits"]
    if ref is None or ref.outputs is None:
        e = max((tol * float(np.abs(f64(ta[n])).max()) for n in names), default=0.0)
        return 4 * e
    tr = ref.output_tensors()
    te = exp.output_tensors() if exp is not None else {}
    shared = [n for n in names if n in tr]
    e_base = max((_max_abs(ta[n], tr[n]) for n in shared), default=0.0)
    if not te:
        return 4 * e_base
    e_target = max((_max_abs(te[n], tr[n]) for n in shared if n in te), default=0.0)
    return 2 * (e_base + e_target)


def _first_differences(rows: Array) -> tuple[int | None, ...]:
    return tuple(int(np.flatnonzero(~r)[0]) if not bool(r.all()) else None for r in rows)


def tokens_check(
    name: str,
    base: Array,
    target: Array,
    margins: Array | None,
    threshold: float,
    forced: Array | None = None,
) -> TokensCheck:
    """Generated tokens against the baseline's, each prompt up to its first difference;
    ``margins``: the baseline's own top-2 margin at each generated position; ``forced``:
    the target's prediction of each generated token teacher-forced on the baseline's
    tokens, which after a prompt's first difference stand for its tokens (every token
    compared)."""
    label = f"tokens {name}" if name == EVERY_TOKENS else f"output {name}"
    if base.shape != target.shape:
        shapes = list(base.shape), list(target.shape)
        unlike = found("quality.shapes-differ", baseline=shapes[0], target=shapes[1])
        return TokensCheck(name=label, passed=False, finding=unlike, output_kind="tokens")
    same = np.asarray(base == target)
    rows = same.reshape(base.shape[0], -1) if base.ndim > 1 else same
    rows = rows if rows.ndim > 1 else rows.reshape(1, -1)
    n, g = rows.shape
    first = _first_differences(rows)
    differ = _differences(rows, first, base, forced)
    after = sum(g - p - 1 for p in first if p is not None)  # tokens after a first difference
    compared, forced_after = n * g, after
    if differ is None:  # each prompt up to and including its first difference
        differ = np.zeros_like(rows)
        for i, p in enumerate(first):
            if p is not None:
                differ[i, p] = True
        compared, forced_after = n * g - after, 0
    diverged = int(differ.sum())
    check = TokensCheck(
        name=label,
        passed=True,
        agreement=(compared - diverged) / compared if compared else 1.0,
        first_difference=first,
        output_kind="tokens",
        prompts=n,
        new_tokens=g,
        compared=compared,
        not_compared=n * g - compared,
        teacher_forced=forced_after or None,
    )
    if not diverged:
        return check
    if margins is None or margins.shape != rows.shape:
        unmargined = found("quality.tokens-no-margins", "reading")
        return replace(check, gated=False, passed=None, finding=unmargined)
    at = tuple(None if p is None else float(margins[i, p]) for i, p in enumerate(first))
    seen = tuple(
        Divergence(prompt=i, position=j, margin=m, near_tie=m < threshold)
        for i, j in np.argwhere(differ).tolist()
        for m in (float(margins[i, j]),)
    )
    flips = sum(not d.near_tie for d in seen)
    said = (
        found("quality.tokens-near-ties", "context")
        if flips == 0
        else found("quality.tokens-flip", flips=flips, margin=threshold)
    )
    return replace(
        check,
        passed=flips == 0,
        margins=at,
        margin_threshold=threshold,
        near_ties=sum(d.near_tie for d in seen),
        divergences=seen,
        finding=said,
    )


def _differences(
    rows: Array,
    first: tuple[int | None, ...],
    base: Array,
    forced: Array | None,
) -> Array | None:
    """Where each token differs: the target's own tokens up to and including a prompt's
    first difference, its teacher-forced predictions after it (None without them)."""
    if forced is None or base.ndim != 2 or tuple(forced.shape) != tuple(base.shape):
        return None
    differ = ~rows
    for i, p in enumerate(first):
        if p is not None:
            differ[i, p + 1 :] = forced[i, p + 1 :] != base[i, p + 1 :]
    return differ


def _rows(t: Array) -> Array:
    x = f64(t)
    return x.reshape(-1, x.shape[-1]) if x.ndim > 1 else x.reshape(1, -1)


def top1_decision(
    head: AgreementCheck, agree: Array, decisive: Array, compared: int
) -> AgreementCheck:
    """A top-1 gate from each compared row's agreement and decisiveness: decided once the
    decisive rows reach :func:`required_rows`; before that, decided as a failure where the
    one-sided Clopper-Pearson upper bound on the agreement is already below the minimum
    (so many flips that no number of further rows would make a pass believable), else
    not decided (never a pass)."""
    count, need = int(decisive.sum()), required_rows(head.threshold)
    value = float(agree[decisive].mean()) if count else None
    check = replace(
        head,
        value=value,
        rows=compared,
        agreement=float(agree.mean()) if compared else None,
        near_ties=compared - count,
        decisive=count,
        required=need,
    )
    if 0 < count < need:
        agreeing = int(agree[decisive].sum())
        bound = upper_bound(agreeing, count, ALPHA)
        if bound < head.threshold:
            early = found(
                "quality.top1-fails-early",
                flips=count - agreeing,
                decisive=count,
                bound=bound,
                level=1 - ALPHA,
                threshold=head.threshold,
                required=need,
            )
            return replace(check, passed=False, decided=True, finding=early)
    if count < need:
        few = found(
            "quality.top1-not-decided", decisive=count, required=need, threshold=head.threshold
        )
        return replace(check, passed=None, decided=False, finding=few)
    assert value is not None
    return replace(check, passed=value >= head.threshold, decided=True)


def top1_check(
    name: str, base: Array, target: Array, threshold: float, minimum: float
) -> AgreementCheck:
    """Top-1 agreement of logits rows, among rows beyond a near-tie."""
    b, t = _rows(base), _rows(target)
    head = AgreementCheck(
        name=f"top-1 {name}",
        passed=False,
        metric="top1",
        threshold=minimum,
        output_kind="logits",
        margin_threshold=threshold,
        output=name,
    )
    if b.shape != t.shape or b.shape[-1] < 2:
        why = "quality.shapes-differ" if b.shape != t.shape else "quality.one-class"
        return replace(head, passed=None, gated=False, finding=found(why))
    top2 = np.partition(b, -2, axis=-1)[:, -2:]  # the second largest, then the largest
    decisive = (top2[:, 1] - top2[:, 0]) > threshold
    return top1_decision(head, b.argmax(-1) == t.argmax(-1), decisive, int(b.shape[0]))


def cosine_check(name: str, base: Array, target: Array, minimum: float) -> AgreementCheck:
    """The smallest per-row cosine similarity of embeddings with the baseline's."""
    b, t = _rows(base), _rows(target)
    if b.shape != t.shape:
        return AgreementCheck(
            name=f"cosine {name}",
            passed=False,
            metric="cosine",
            threshold=minimum,
            finding=found("quality.shapes-differ"),
        )
    cos = cosine_similarity(b, t, axis=-1)
    value = float(cos.min()) if cos.size and bool(np.isfinite(cos).all()) else 0.0
    return AgreementCheck(
        name=f"cosine {name}",
        passed=value >= minimum,
        metric="cosine",
        value=value,
        threshold=minimum,
        rows=int(b.shape[0]),
        output_kind="embeddings",
        output=name,
    )


def every_position_checks(
    ta: Arrays, tb: Arrays, ma: Arrays, mb: Arrays, threshold: float, minimum: Minimums
) -> list[QualityCheck]:
    """Every prompt's tokens, and top-1 and cosine at every position where both sides saw
    the same context: with the target's scores on the baseline's tokens
    (``every_forced``), every position of every prompt; without, every prompt position
    and each generated position up to and including the prompt's first difference
    (``every_top1`` holds ``prompt - 1 + new_tokens`` positions per prompt: position ``j``
    predicts token ``j + 1`` of prompt and tokens). ``ma``/``mb``: each side's margins,
    sketches and forced scores; ``minimum``: by metric."""
    base, target = ta[EVERY_TOKENS], tb[EVERY_TOKENS]
    pa, pb, margins = ta.get(EVERY_TOP1), tb.get(EVERY_TOP1), ma.get(EVERY_TOP1)
    sa, sb = ma.get(EVERY_SKETCH), mb.get(EVERY_SKETCH)
    forced = mb.get(EVERY_FORCED)
    usable = (
        forced is not None
        and pa is not None
        and base.ndim == 2
        and forced.shape == pa.shape
        and pa.shape[0] == base.shape[0]
        and pa.shape[1] >= base.shape[1]
    )
    prefill = pa.shape[1] - base.shape[1] if pa is not None and base.ndim == 2 else 0
    on_theirs = forced[:, prefill:] if usable and forced is not None else None
    tokens = tokens_check(EVERY_TOKENS, base, target, ma.get(EVERY_TOKENS), threshold, on_theirs)
    head = AgreementCheck(
        name="top-1 every position",
        passed=False,
        metric="top1",
        threshold=minimum.top1,
        output_kind="logits",
        margin_threshold=threshold,
        output=EVERY_TOP1,
    )
    if pa is None or pb is None or margins is None or pa.shape != pb.shape:
        unmatched = found("quality.no-every-argmax", "reading")
        return [tokens, replace(head, passed=None, gated=False, finding=unmatched)]
    if base.shape != target.shape or margins.shape != pa.shape or pa.shape[0] != base.shape[0]:
        return [tokens, replace(head, finding=found("quality.shapes-differ"))]
    n, width = pa.shape
    if usable and forced is not None:  # every row on the baseline's context
        same_context = np.ones((n, width), dtype=bool)
        pb, sb = forced, mb.get(EVERY_FORCED_SKETCH)
    else:
        first = tokens.first_difference
        reach = np.array([width if p is None else prefill + p + 1 for p in first])
        same_context = np.arange(width)[None, :] < reach[:, None]
    compared = int(same_context.sum())
    decisive = same_context & (f64(margins) > threshold)
    agree = np.asarray(pa == pb)
    check = top1_decision(head, agree[same_context], decisive[same_context], compared)
    checks: list[QualityCheck] = [tokens, replace(check, not_compared=n * width - compared)]
    if sa is not None and sb is not None:
        checks.append(sketched_cosine(sa, sb, same_context, minimum.cosine))
    return checks


def sketched_cosine(a: Array, b: Array, same_context: Array, minimum: float) -> AgreementCheck:
    """The smallest cosine of the logits at every same-context position, from each side's
    sketches (``parity.sketch``: exact for rows of at most ``DIMS`` logits, else ``1 -
    cos`` within about sqrt(2 / DIMS) relative)."""
    head = AgreementCheck(
        name="cosine every position",
        passed=False,
        metric="cosine",
        threshold=minimum,
        output_kind="logits",
        output=EVERY_TOP1,
    )
    if a.shape != b.shape or a.shape[:2] != same_context.shape:
        return replace(head, finding=found("quality.sketches-differ"))
    cos = cosine(a, b)[same_context]
    finite = cos.size > 0 and bool(np.isfinite(cos).all())
    value = float(cos.min()) if finite else 0.0
    read = found(
        "quality.cosine-read",
        "context" if finite else "blocks",
        sketch=None if a.shape[-1] < DIMS else DIMS,
        finite=finite,
    )
    return replace(
        head,
        passed=finite and value >= minimum,
        value=value,
        rows=int(cos.size),
        not_compared=int(same_context.size - cos.size),
        finding=read,
    )


def _rows_again(name: str, tensors: Arrays, shared: set[str]) -> bool:
    """``name`` is the first batch's output and ``final_NAME`` holds its rows again among
    more (an inference runner's ``finish`` forwards several batches): the top-1 gate
    decides on the larger one, as the every-prompt outputs decide for the first batch's."""
    again = f"{FINAL}{name}"
    if again not in shared:
        return False
    return bool(_rows(tensors[again]).shape[0] > _rows(tensors[name]).shape[0])


def agreement_checks(
    a: Bundle,
    b: Bundle,
    ref: Bundle | None,
    exp: Bundle | None,
    row: Tolerance,
    minimum: Minimums,
) -> list[QualityCheck]:
    """Tokens, top-1 and cosine checks of every output both sides produced; where a
    generate workload recorded every prompt (``every_*``), those decide for its first
    batch's tokens and prefill logits."""
    ta, tb = a.output_tensors(), b.output_tensors()
    ma, mb = a.margin_tensors(), b.margin_tensors()
    threshold = near_tie_margin(a, ref, exp, row.tol)
    every = EVERY_TOKENS in ta and EVERY_TOKENS in tb
    checks: list[QualityCheck] = []
    if every:
        checks += every_position_checks(ta, tb, ma, mb, threshold, minimum)
    shared = set(ta) & set(tb)
    for name in sorted(shared - {EVERY_TOKENS, EVERY_TOP1}):
        if every and name in COVERED:
            continue
        kind = _kind(a, name, ta[name])
        if kind == "tokens":
            checks.append(tokens_check(name, ta[name], tb[name], ma.get(name), threshold))
        elif kind == "logits" and not _rows_again(name, ta, shared):
            checks.append(top1_check(name, ta[name], tb[name], threshold, minimum.top1))
        elif kind == "embeddings":
            checks.append(cosine_check(name, ta[name], tb[name], minimum.cosine))
    return checks
