"""Measuring one side of a serving comparison, start to end.

In order: start the server (where the side is a command) and time its cold start; probe
it (``endpoint.discover``); warm it up (the load's warm-up prompts, every length bucket
the load uses, left out of every figure); the quality step (greedy answers to the first
prompts at concurrency 1); the capacity search at the limits; the step under load at
the chosen rate (its answers are compared too); with ``--soak``, a long run of constant
arrivals at the side's own highest passing rate (label ``soak``: the load's prompts in
turn, again and again); a ``/metrics`` scrape. The two quality steps ask for each token's
log-probability; the other steps do not. The server is
stopped by process group whatever happens; what was measured before a failure is kept.
"""

from __future__ import annotations

import asyncio
import math
import sys
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.errors import ParityError, SideError
from parity.model.fair import LatencyLimit
from parity.model.serving import Capacity, Load, RequestEvent, ServeSide, StepFigures
from parity.safety.redact import redact, redactor
from parity.serving import capacity, server
from parity.serving.client import LOGPROBS, Endpoint
from parity.serving.endpoint import discover
from parity.serving.load import Tokenizer, measured
from parity.serving.step import StepPlan, run_step

#: the soak step's label
SOAK = "soak"
#: closed-loop concurrency and requests of the client-ceiling step
CEILING_CONCURRENCY = 32
CEILING_REQUESTS = 300


@dataclass(frozen=True, kw_only=True)
class SideSpec:
    role: str
    url: str
    command: tuple[str, ...] | None = None
    model: str | None = None
    api_path: str = "/v1/completions"
    headers: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, kw_only=True)
class Settings:
    limits: Sequence[LatencyLimit] = ()
    quality_prompts: int = 16
    start_rate: float | None = None
    load_rate: float | None = None
    max_steps: int = capacity.MAX_STEPS
    lag_bound_s: float = 0.025
    ready_timeout_s: float = 900.0
    ceiling: bool = True
    #: a soak's length at the side's highest passing rate (None: no soak), and its bound
    #: on latency drift (relative per hour), recorded with the side for ``parity diff``
    soak_s: float | None = None
    max_drift: float = 0.10


@dataclass
class Measured:
    """What a side produced, kept whatever happened after it."""

    side: ServeSide
    steps: list[StepFigures] = field(default_factory=list)
    events: list[RequestEvent] = field(default_factory=list)
    scrape: str | None = None
    interrupted: bool = False


def _step(
    endpoint: Endpoint, load: Load, tok: Tokenizer, plan: StepPlan, into: Measured
) -> StepFigures:
    figures, events = asyncio.run(run_step(endpoint, load, tok, plan))
    into.steps.append(figures)
    into.events.extend(events)
    return figures


def _scrape(base: str) -> str | None:
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=10) as resp:
            if resp.status == 200:
                return redact(resp.read(1 << 20).decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return None


def client_ceiling(load: Load, tok: Tokenizer, logs: Path) -> float:
    """Good requests/s the client reaches against a server that does no work."""
    from parity.serving.endpoint import base_url

    port = _free_port()
    base = base_url(f"http://127.0.0.1:{port}", "ceiling")
    cmd = [sys.executable, "-m", "parity.testing.scripted", "--port", str(port)]
    started = server.start([*cmd, "--ttft", "0", "--token", "0"], base, logs, ready_timeout_s=60)
    try:
        endpoint = Endpoint(base=base, model="scripted")
        count = min(CEILING_REQUESTS, len(load.prompts))
        plan = StepPlan(label="ceiling", indices=range(count), concurrency=CEILING_CONCURRENCY)
        figures, _ = asyncio.run(run_step(endpoint, load, tok, plan))
        return figures.throughput_rps
    finally:
        started.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def side_record(spec: SideSpec, **more: Any) -> ServeSide:
    """The record of a side as given (``more``: what is known of it so far)."""
    return ServeSide(
        role="baseline" if spec.role == "baseline" else "target",
        url=spec.url,
        api_path=spec.api_path,
        model=spec.model or "",
        prompt_form="ids",
        **more,
    )


def measure_side(
    spec: SideSpec, load: Load, tok: Tokenizer, settings: Settings, logs: Path
) -> Measured:
    """Measure one side; a failure after the start is recorded in the result, not raised
    (a ``UsageError`` from the probe of a URL side is raised: nothing was measured)."""
    started: server.Started | None = None
    side = side_record(
        spec,
        server_command=redactor().argv(spec.command) if spec.command else None,
        versions=_versions(),
        soak_s=settings.soak_s,
        max_drift=settings.max_drift if settings.soak_s else None,
    )
    out = Measured(side=side)
    try:
        if spec.command:
            started = server.start(
                spec.command, spec.url, logs, ready_timeout_s=settings.ready_timeout_s
            )
            out.side = _with(out.side, cold_start_s=started.cold_start_s)
        first = list(load.prompts[load.warmup])
        endpoint = asyncio.run(
            discover(
                spec.url, spec.role, model=spec.model, ids=first, text=tok.decode(first),
                api_path=spec.api_path, headers=spec.headers,
            )
        )  # fmt: skip
        out.side = _with(out.side, model=endpoint.model, prompt_form=endpoint.prompt_form)
        _run(endpoint, load, tok, settings, out)
        out.scrape = _scrape(spec.url)
    except ParityError as exc:
        if spec.command is None and not out.steps and not isinstance(exc, SideError):
            raise
        out.side = _with(out.side, status="failed", reason=redact(str(exc)))
    except KeyboardInterrupt:  # kept, and said; the caller stops after this side
        out.side = _with(out.side, status="failed", reason="interrupted (Ctrl-C or SIGTERM)")
        out.interrupted = True
    finally:
        if started is not None:
            started.stop()
    return out


def _run(endpoint: Endpoint, load: Load, tok: Tokenizer, s: Settings, out: Measured) -> None:
    if load.warmup:
        plan = StepPlan(label="warmup", indices=range(load.warmup), concurrency=1)
        asyncio.run(run_step(endpoint, load, tok, plan))  # left out of every figure
    chosen = measured(load)
    quality = chosen[: min(s.quality_prompts, len(chosen))]
    c1 = _step(
        endpoint, load, tok,
        StepPlan(label="c1", indices=quality, concurrency=1, limits=s.limits,
                 lag_bound_s=s.lag_bound_s, early_stop=False, logprobs=LOGPROBS),
        out,
    )  # fmt: skip
    if load.arrival == "closed":
        _closed_loop(endpoint, load, tok, s, out)
        return
    found: Capacity | None = None
    if s.limits:
        e2e = next((q.value_s for q in c1.from_send["e2e"] if q.percentile == 50), None)
        start = s.start_rate or (1 / e2e if e2e else 1.0)

        def at(rate: float) -> StepFigures:
            plan = StepPlan(label=f"rate={rate:.4g}", indices=chosen, rate=rate,
                            limits=s.limits, lag_bound_s=s.lag_bound_s)  # fmt: skip
            return _step(endpoint, load, tok, plan, out)

        found = capacity.search(at, start, max_steps=s.max_steps)
        out.side = _with(out.side, capacity=found)
    rate = s.load_rate or (found.rate if found else None)
    if rate:
        plan = StepPlan(label="load", indices=chosen, rate=rate, limits=s.limits,
                        lag_bound_s=s.lag_bound_s, early_stop=False, logprobs=LOGPROBS)  # fmt: skip
        _step(endpoint, load, tok, plan, out)
    own = found.rate if found and found.rate else s.load_rate
    if s.soak_s and own:
        _step(endpoint, load, tok, soak_plan(chosen, own, s), out)


def soak_plan(chosen: Sequence[int], rate: float, s: Settings) -> StepPlan:
    """Constant arrivals at ``rate`` for the soak's length, the prompts in turn. It is
    not ended early: a queue that grows shows as drift and in the limits, and testing for
    an early end on every tick would cost a long run's client its own pace."""
    assert s.soak_s is not None
    count = max(1, math.ceil(rate * s.soak_s))
    indices = [chosen[j % len(chosen)] for j in range(count)]
    return StepPlan(label=SOAK, indices=indices, rate=rate, arrival="constant",
                    limits=s.limits, lag_bound_s=s.lag_bound_s, early_stop=False)  # fmt: skip


def _closed_loop(
    endpoint: Endpoint, load: Load, tok: Tokenizer, s: Settings, out: Measured
) -> None:
    """A closed loop has no rate to search: one step at ``--concurrency``; where it passes
    every limit, its throughput is the side's rate within them."""
    plan = StepPlan(label="load", indices=measured(load), concurrency=load.concurrency,
                    limits=s.limits, lag_bound_s=s.lag_bound_s, early_stop=False,
                    logprobs=LOGPROBS)  # fmt: skip
    step = _step(endpoint, load, tok, plan, out)
    if s.limits:
        passed = step.decision == "pass"
        found = Capacity(
            rate=step.throughput_rps if passed else None,
            failed_above=None if passed else step.throughput_rps,
            steps=(step.label,),
            stopped="closed-loop",
        )
        out.side = _with(out.side, capacity=found)


def _with(side: ServeSide, **changes: object) -> ServeSide:
    from dataclasses import replace

    return replace(side, **changes)  # type: ignore[arg-type]


def _versions() -> dict[str, str]:
    import platform
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("parity", "aiohttp"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out
