"""The documents of a serving comparison: the frozen load, each request's events, each
side's steps, and the serving verdict.

A serving side bundle holds ``load.json`` (:class:`Load`), ``side.json``
(:class:`ServeSide`), ``steps.json`` (:class:`Steps`) and ``events.jsonl`` (one
:class:`RequestEvent` a line); the comparison directory holds ``verdict.json``
(:class:`ServeVerdict`). Times of a request are nanoseconds of ``perf_counter_ns`` from
the start of its step, so they compare within a step and never across machines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.checks import SlopeGate
from parity.model.codec import doc, omit_none
from parity.model.verdict import UnprovenItem

Arrival = Literal["poisson", "gamma", "constant", "closed"]
PromptForm = Literal["ids", "text"]
RequestStatus = Literal["ok", "error", "timeout", "truncated", "cancelled"]
Decision = Literal["pass", "fail", "unproven", "client-bound"]
Outcome = Literal["pass", "fail", "inconclusive"]
ROLES = ("baseline", "target")


@dataclass(frozen=True, kw_only=True, slots=True)
class Load:
    """One frozen load, replayed on both sides: its fingerprint covers every field but
    ``fingerprint`` itself (``serving.load.fingerprint``)."""

    arrival: Arrival = doc("open-loop arrivals (poisson, gamma, constant) or closed-loop")
    burstiness: float = doc("gamma shape: 1 is Poisson, below 1 burstier", default=1.0)
    seed: int = 0
    requests: int = doc("requests per measured step")
    concurrency: int = doc("closed loop: requests in flight", default=1)
    warmup: int = doc("requests sent first and left out of every figure", default=0)
    tokenizer: str = doc("the tokenizer the prompts were built with, and its digest")
    source: str = doc("the text the prompts were cut from (packaged or --data, with digest)")
    prompt_tokens: tuple[int, int] = doc("prompt length range, uniform, inclusive")
    output_tokens: tuple[int, int] = doc("max_tokens range, uniform, inclusive")
    prompts: tuple[tuple[int, ...], ...] = doc("token-ID prompts, in schedule order")
    max_tokens: tuple[int, ...]
    temperature: float = 0.0
    fingerprint: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Logprob:
    """One generated token as the server reported it: its text, its log-probability and the
    alternatives the server listed with theirs (most likely first)."""

    piece: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestEvent:
    """One request of one step: its stamps (ns from the step's start) and what came back."""

    step: str
    index: int = doc("the prompt's index in the load")
    scheduled_ns: int
    ready_ns: int | None = omit_none(doc="when a --max-concurrency slot freed, if after due")
    sent_ns: int
    first_ns: int | None = None
    end_ns: int | None = None
    chunks_ns: tuple[int, ...] = ()
    chunk_sizes: tuple[int, ...] = doc("tokens of each chunk, by the local tokenizer", default=())
    usage_count: int | None = doc("output tokens the server's usage reported", default=None)
    local_count: int = doc("output tokens by the local tokenizer", default=0)
    status: RequestStatus = "ok"
    error: str | None = omit_none(doc="the error, redacted")
    text: str = ""
    output_ids: tuple[int, ...] = doc("the output text's token IDs, local tokenizer", default=())
    logprobs: tuple[Logprob, ...] | None = omit_none(
        doc="the server's tokens with log-probabilities, where asked (quality steps) and given"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Quantile:
    """A percentile with its distribution-free 95% one-sided bounds and sample count."""

    percentile: int
    n: int
    value_s: float | None = doc("None: beyond every good request (too many not good)")
    lower_s: float | None
    upper_s: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class LimitCheck:
    """One latency limit at one step: pass (upper bound within), fail (lower bound over),
    unproven (between, or too few samples)."""

    name: str
    limit_s: float
    status: Literal["pass", "fail", "unproven"]
    quantile: Quantile | None


@dataclass(frozen=True, kw_only=True, slots=True)
class StepFigures:
    """One step's figures: percentiles from the schedule and from the send, kept apart."""

    label: str
    rate: float | None = doc("requests/s offered; None for a closed loop")
    concurrency: int | None = None
    sent: int
    good: int = doc("ok requests (errors, timeouts, truncated and cancelled are not good)")
    errors: dict[str, int] = field(default_factory=dict)
    first_errors: tuple[str, ...] = ()
    duration_s: float
    throughput_rps: float = doc("good requests per second of the step")
    output_tps: float = doc("output tokens per second of the step")
    mean_output_tokens: float
    token_discrepancy: int = doc("sum of |usage - local count| over requests with usage", default=0)
    from_schedule: dict[str, tuple[Quantile, ...]] = field(default_factory=dict)
    from_send: dict[str, tuple[Quantile, ...]] = field(default_factory=dict)
    per_token: dict[str, tuple[Quantile, ...]] = doc("tpot, itl (per token), icl (per chunk)")
    dispatch_lag_p99_s: float
    loop_lag_p99_s: float
    client_bound: bool
    saturated: bool = doc("ended early: enough requests over a limit to fail it already")
    checks: tuple[LimitCheck, ...] = ()
    decision: Decision = "unproven"


@dataclass(frozen=True, kw_only=True, slots=True)
class Capacity:
    """A side's highest request rate within every limit, from one search."""

    rate: float | None = doc("the highest passing rate; None where none passed")
    failed_above: float | None = doc("the lowest rate that failed or was not proven")
    steps: tuple[str, ...] = doc("the labels of the search's steps, in order")
    stopped: str = doc("why the search stopped: converged, budget, none-passed")


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeSide:
    """``side.json``: the endpoint as measured and how the side ended."""

    role: Literal["baseline", "target"]
    url: str = doc("the base URL, without user info, query or fragment")
    api_path: str
    model: str
    prompt_form: PromptForm
    server_command: tuple[str, ...] | None = omit_none(doc="redacted")
    cold_start_s: float | None = omit_none(doc="start to the first healthy answer")
    versions: dict[str, str] = field(default_factory=dict)
    client_ceiling_rps: float | None = omit_none(doc="the client against a no-work server")
    capacity: Capacity | None = omit_none()
    soak_s: float | None = omit_none(doc="the soak asked for (--soak): its planned length")
    max_drift: float | None = omit_none(doc="the soak's drift bound (--max-drift), per hour")
    status: Literal["ok", "failed"] = "ok"
    reason: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Steps:
    """``steps.json``: every step of a side, in the order run."""

    steps: tuple[StepFigures, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Divergence:
    """The first token (the server's own) where the two answers to a prompt differ, with
    what each side thought of the other's choice (from its listed alternatives)."""

    prompt: int
    position: int = doc("the server token's position in the answer")
    baseline_piece: str
    baseline_logprob: float
    target_piece: str
    target_logprob: float
    baseline_of_target: float | None = omit_none(
        doc="the baseline's log-probability of the target's token (None: not in its list)"
    )
    target_of_baseline: float | None = omit_none(
        doc="the target's log-probability of the baseline's token (None: not in its list)"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class LogprobDeltas:
    """Log-probability differences between the sides where their answers agree, and at the
    first token where they do not."""

    prompts: int = doc("prompts both sides answered with log-probabilities")
    tokens: int = doc("tokens compared: the agreeing prefix of each pair, summed")
    mean_abs: float = doc("mean |target - baseline| log-probability over those tokens")
    max_abs: float
    at_divergence: Divergence | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Agreement:
    """Greedy outputs of the same prompts, token by token (local tokenizer)."""

    label: str
    prompts: int
    exact: int = doc("prompts whose outputs are token for token the same")
    tokens: int = doc("tokens compared (the common length of each pair, summed)")
    first_divergence: tuple[int, int, int, int] | None = omit_none(
        doc="(prompt, position, baseline token, target token) of the first difference"
    )
    logprobs: LogprobDeltas | None = omit_none(doc="None: a side gave no log-probabilities")
    logprobs_absent: tuple[str, ...] = doc("the sides whose server gave none", default=())

    @property
    def rate(self) -> float:
        return self.exact / self.prompts if self.prompts else 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class SideCost:
    usd_per_hour: float
    per_1k_requests: float
    per_1m_output_tokens: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeCost:
    baseline: SideCost | None = omit_none()
    target: SideCost | None = omit_none()
    break_even_usd_per_hour: float | None = omit_none(
        doc="the target's price per hour at which its cost per request equals the baseline's"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeWindow:
    """One window of a soak: the requests due in it (``serving.metrics.windows``)."""

    t_s: float = doc("the window's end, seconds from the soak's start")
    sent: int
    good: int
    median_e2e_s: float | None = doc(
        "median E2E from the schedule, a request not good counting as over every value; "
        "None where half or more were not good"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeSoak:
    """A side's sustained run (``--soak``): constant arrivals at its highest passing rate,
    judged as ``parity check soak`` judges one: the slope of the windows' median latency."""

    rate: float
    duration_s: float = doc("how long it ran (the planned length, unless it was stopped)")
    windows: tuple[ServeWindow, ...]
    warmup_s: float = doc("the first part left out of the slope")
    drift: SlopeGate = doc("latency drift, relative per hour, against --max-drift")
    failed_windows: int = doc("windows after warm-up where half or more were not good")
    limits: str = doc("the soak step's decision at the --slo limits")
    passed: bool = doc("drift excluded above the bound, every window good, the limits held")
    conclusive: bool = doc("False: the interval still reaches above the bound (run longer)")


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeVerdict:
    """``verdict.json`` of a serving comparison: facts and codes, no sentences."""

    kind: Literal["serve"] = "serve"
    fingerprint: str
    limits: tuple[tuple[str, float], ...]
    min_match: float
    quality: tuple[Agreement, ...]
    quality_passed: bool
    capacity: dict[str, Capacity | None]
    ratio: float | None = omit_none(doc="target / baseline highest rate within the limits")
    cost: ServeCost | None = omit_none()
    failed_sides: dict[str, str] = field(default_factory=dict)
    soak: dict[str, ServeSoak] = doc("each side's soak, where one ran", default_factory=dict)
    max_drift: float = doc("the soak's bound on latency drift, relative per hour", default=0.1)
    unproven: tuple[UnprovenItem, ...] = doc("what the comparison has not proven", default=())
    outcome: Outcome
    codes: tuple[str, ...] = doc("why: quality-differs, side-failed, no-rate-passed, ...")
