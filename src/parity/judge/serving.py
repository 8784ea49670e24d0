"""The serving verdict: quality first, then each side's highest rate within the limits,
their ratio and the cost per request there. Pure: facts in, facts and codes out.

- quality: at concurrency 1 (``c1``) and under load (``load``), each prompt's greedy
  output token IDs (local tokenizer) compared between the sides; the exact-match rate over
  the prompts both answered must be at least ``min_match``; the first difference is kept;
  where both servers gave log-probabilities, their differences over the agreeing tokens
  and, at the first differing token, what each side thought of the other's choice (a
  near-tie that flipped reads differently from a confident disagreement);
- capacity: each side's search result; the ratio target/baseline of the highest passing
  rates; the target passes where it holds some rate within every limit;
- cost (``--price``): price per hour / (rate x 3600) x 1e3 per 1k requests, and per 1M
  output tokens with the mean output tokens at that rate; the target's break-even price
  makes its cost per request equal the baseline's.

- sustained load (``--soak``): each side's soak windows' median latency against time,
  a slope with its 95% interval relative per hour against ``max_drift`` (as ``parity check
  soak`` judges), the soak step's limits, and no window mostly not good; the target's
  passing soak ticks ``sustained load`` in the unproven list.

Codes (words are the report's): ``side-failed``, ``load-differs``, ``quality-differs``,
``quality-unmeasured``, ``no-limits``, ``target-holds-no-rate``, ``no-rate-passed``,
``below-min-ratio``, ``client-bound``, ``soak-fails``, ``soak-inconclusive``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from parity.judge.drift import slope_gate
from parity.model.checks import Slope, SlopeGate
from parity.model.codec import Json, encode
from parity.model.findings import Finding
from parity.model.inputs import Price
from parity.model.serving import (
    Agreement,
    Capacity,
    Divergence,
    Logprob,
    LogprobDeltas,
    Outcome,
    ServeCost,
    ServeSide,
    ServeSoak,
    ServeVerdict,
    ServeWindow,
    SideCost,
    StepFigures,
)
from parity.model.verdict import UnprovenItem

QUALITY_STEPS = ("c1", "load")
SOAK = "soak"
#: the soak's start left out of the slope (as parity check soak's --warmup)
SOAK_WARMUP = 0.1
#: windows after warm-up needed for a slope (as parity check soak)
MIN_WINDOWS = 8
#: latency drift bound, relative per hour (parity check soak's default)
MAX_DRIFT = 0.10
SUSTAINED = "sustained load"
#: how to check a sustained load (``parity.report.words.how_to_check`` says it)
HOW_TO_SOAK = "serve.soak"


@dataclass(frozen=True, kw_only=True)
class SideFacts:
    """What the judge reads of one side's bundle."""

    side: ServeSide
    fingerprint: str
    steps: tuple[StepFigures, ...]
    outputs: Mapping[str, Mapping[int, tuple[int, ...]]] = field(default_factory=dict)
    #: each step's answers' server tokens with log-probabilities, where the server gave them
    logprobs: Mapping[str, Mapping[int, tuple[Logprob, ...]]] = field(default_factory=dict)
    #: the soak's windows (``serving.metrics.windows``), where one ran
    soak_windows: tuple[ServeWindow, ...] = ()

    def step(self, label: str) -> StepFigures | None:
        return next((s for s in self.steps if s.label == label), None)


def _of(scored: Logprob, piece: str) -> float | None:
    """A side's log-probability of ``piece`` at a position: its choice's or a listed one."""
    if scored.piece == piece:
        return scored.logprob
    return next((lp for p, lp in scored.top if p == piece), None)


def logprob_deltas(
    base: Mapping[int, tuple[Logprob, ...]], target: Mapping[int, tuple[Logprob, ...]]
) -> LogprobDeltas | None:
    """Differences over the agreeing prefix of each prompt both sides scored, and the
    first differing token (in prompt order); None where no prompt was scored by both."""
    both = sorted(set(base) & set(target))
    if not both:
        return None
    gaps: list[float] = []
    first: Divergence | None = None
    for i in both:
        a, b = base[i], target[i]
        for j, (x, y) in enumerate(zip(a, b, strict=False)):
            if x.piece != y.piece:
                if first is None:
                    first = Divergence(
                        prompt=i, position=j, baseline_piece=x.piece, baseline_logprob=x.logprob,
                        target_piece=y.piece, target_logprob=y.logprob,
                        baseline_of_target=_of(x, y.piece), target_of_baseline=_of(y, x.piece),
                    )  # fmt: skip
                break
            gaps.append(abs(y.logprob - x.logprob))
    return LogprobDeltas(
        prompts=len(both),
        tokens=len(gaps),
        mean_abs=sum(gaps) / len(gaps) if gaps else 0.0,
        max_abs=max(gaps, default=0.0),
        at_divergence=first,
    )


def agreement(
    label: str,
    base: Mapping[int, tuple[int, ...]],
    target: Mapping[int, tuple[int, ...]],
    scores: Mapping[str, Mapping[int, tuple[Logprob, ...]]] | None = None,
) -> Agreement:
    """Token-by-token agreement over the prompts both sides answered; ``scores``: each
    role's log-probabilities at this step (a role without any: its server gave none)."""
    both = sorted(set(base) & set(target))
    exact, tokens = 0, 0
    first: tuple[int, int, int, int] | None = None
    for i in both:
        a, b = base[i], target[i]
        tokens += min(len(a), len(b))
        if a == b:
            exact += 1
            continue
        if first is None:
            at = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            at = min(len(a), len(b)) if at is None else at
            first = (i, at, a[at] if at < len(a) else -1, b[at] if at < len(b) else -1)
    scores = scores or {}
    absent = tuple(r for r in ("baseline", "target") if not scores.get(r))
    deltas = None
    if not absent:
        deltas = logprob_deltas(scores["baseline"], scores["target"])
    return Agreement(
        label=label, prompts=len(both), exact=exact, tokens=tokens, first_divergence=first,
        logprobs=deltas, logprobs_absent=absent,
    )  # fmt: skip


def _side_cost(price: Price, cap: Capacity | None, facts: SideFacts) -> SideCost | None:
    if cap is None or cap.rate is None:
        return None
    hourly = price.usd_per_hour / price.accelerators
    at = next((s for s in facts.steps if s.rate == cap.rate and s.decision == "pass"), None)
    tokens = at.mean_output_tokens if at is not None and at.mean_output_tokens > 0 else None
    per_request = hourly / (cap.rate * 3600)
    return SideCost(
        usd_per_hour=hourly,
        per_1k_requests=per_request * 1e3,
        per_1m_output_tokens=per_request / tokens * 1e6 if tokens else 0.0,
    )


def cost(sides: Mapping[str, SideFacts], prices: Mapping[str, Price]) -> ServeCost | None:
    if not prices:
        return None
    made = {
        role: _side_cost(prices[role], sides[role].side.capacity, sides[role])
        for role in ("baseline", "target")
        if role in prices and role in sides
    }
    base, target = made.get("baseline"), made.get("target")
    even = None
    if base is not None and "target" in prices:
        t_cap = sides["target"].side.capacity
        if t_cap is not None and t_cap.rate is not None:
            per_request = base.per_1k_requests / 1e3
            even = per_request * t_cap.rate * 3600 * prices["target"].accelerators
    return ServeCost(baseline=base, target=target, break_even_usd_per_hour=even)


def soak(facts: SideFacts, max_drift: float) -> ServeSoak | None:
    """A side's soak judged for drift; None where it ran none."""
    step = facts.step(SOAK)
    if step is None or step.rate is None:
        return None
    duration = facts.side.soak_s or step.duration_s
    warmup = SOAK_WARMUP * duration
    kept = [w for w in facts.soak_windows if w.t_s > warmup]
    timed = [w for w in kept if w.median_e2e_s is not None]
    if len(timed) < MIN_WINDOWS:
        few = Finding(
            code="drift.too-few-windows",
            severity="blocks",
            figures={"windows": len(timed), "needed": MIN_WINDOWS},
        )
        blank = Slope(slope=None, low=None, high=None, unit="relative per hour", bound=max_drift)
        drift = SlopeGate(name="latency drift", passed=False, finding=few, figure=blank)
        conclusive = False
    else:
        t = [w.t_s for w in timed]
        lat = [w.median_e2e_s or 0.0 for w in timed]
        ref = statistics.median(lat)
        drift = slope_gate(
            "latency drift", t, lat, 3600.0 / ref, max_drift, "relative per hour"
        )  # fmt: skip
        conclusive = bool(drift.figure.conclusive)
    failed = len(kept) - len(timed)
    held = step.decision == "pass"
    # a failure anywhere decides it; a pass needs the drift excluded above the bound
    refuted = failed > 0 or step.decision == "fail" or (conclusive and not drift.passed)
    return ServeSoak(
        rate=step.rate,
        duration_s=duration,
        windows=facts.soak_windows,
        warmup_s=warmup,
        drift=drift,
        failed_windows=failed,
        limits=step.decision,
        passed=not refuted and conclusive and drift.passed and held,
        conclusive=refuted or (conclusive and held),
    )


def _evidence(role: str, s: ServeSoak) -> Finding:
    """What a side's soak showed, for the sustained-load item (``serve.soak-ran``)."""
    figures: dict[str, Json] = {"role": role, "rate": s.rate, "duration_s": s.duration_s}
    return Finding(
        code="serve.soak-ran",
        severity="context",
        figures=figures | {"drift": encode(s.drift), "limits": s.limits},
    )


def unproven(soaks: Mapping[str, ServeSoak]) -> tuple[UnprovenItem, ...]:
    target = soaks.get("target")
    checked = target is not None and target.passed
    return (
        UnprovenItem(
            item=SUSTAINED,
            checked=checked,
            evidence=None,
            how_to_check=HOW_TO_SOAK,
            finding=_evidence("target", target) if target is not None else None,
        ),
    )


def judge(
    sides: Mapping[str, SideFacts],
    *,
    limits: tuple[tuple[str, float], ...],
    min_match: float,
    prices: Mapping[str, Price],
    min_ratio: float | None = None,
    max_drift: float = MAX_DRIFT,
) -> ServeVerdict:
    """The verdict of two measured sides (either may have failed)."""
    codes: list[str] = []
    failed = {r: f.side.reason or "failed" for r, f in sides.items() if f.side.status != "ok"}
    if failed:
        codes.append("side-failed")
    prints = {f.fingerprint for f in sides.values()}
    if len(prints) > 1:
        codes.append("load-differs")
    quality: list[Agreement] = []
    base, target = sides.get("baseline"), sides.get("target")
    if base is not None and target is not None:
        for label in QUALITY_STEPS:
            a, b = base.outputs.get(label), target.outputs.get(label)
            if a and b:
                scores = {
                    "baseline": base.logprobs.get(label) or {},
                    "target": target.logprobs.get(label) or {},
                }
                quality.append(agreement(label, a, b, scores))
    quality_passed = bool(quality) and all(q.rate >= min_match for q in quality)
    if not quality:
        codes.append("quality-unmeasured")
    elif not quality_passed:
        codes.append("quality-differs")
    caps = {r: f.side.capacity for r, f in sides.items()}
    b_cap, t_cap = caps.get("baseline"), caps.get("target")
    b_rate = b_cap.rate if b_cap else None
    t_rate = t_cap.rate if t_cap else None
    ratio = t_rate / b_rate if t_rate and b_rate else None
    if any(c is not None and c.stopped == "client-bound" for c in caps.values()):
        codes.append("client-bound")
    if not limits:
        codes.append("no-limits")
    elif t_rate is None and b_rate is not None:
        codes.append("target-holds-no-rate")
    elif t_rate is None:
        codes.append("no-rate-passed")
    elif min_ratio is not None and (ratio is None or ratio < min_ratio):
        codes.append("below-min-ratio")
    soaks = {r: s for r, f in sides.items() if (s := soak(f, max_drift)) is not None}
    t_soak = soaks.get("target")
    if t_soak is not None and t_soak.conclusive and not t_soak.passed:
        codes.append("soak-fails")
    elif t_soak is not None and not t_soak.conclusive:
        codes.append("soak-inconclusive")
    return ServeVerdict(
        fingerprint=sorted(prints)[0] if prints else "",
        limits=limits,
        min_match=min_match,
        quality=tuple(quality),
        quality_passed=quality_passed,
        capacity=dict(caps),
        ratio=ratio,
        cost=cost(sides, prices),
        failed_sides=failed,
        soak=soaks,
        max_drift=max_drift,
        unproven=unproven(soaks),
        outcome=_outcome(codes),
        codes=tuple(codes),
    )


def _outcome(codes: list[str]) -> Outcome:
    failing = {
        "side-failed", "load-differs", "quality-differs", "target-holds-no-rate", "soak-fails"
    }  # fmt: skip
    if failing & set(codes) or "below-min-ratio" in codes:
        return "fail"
    unsure = {"quality-unmeasured", "no-rate-passed", "no-limits", "client-bound"}
    if (unsure | {"soak-inconclusive"}) & set(codes):
        return "inconclusive"
    return "pass"
