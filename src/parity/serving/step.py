"""One measured step: the load's requests against one endpoint, open loop at a rate or
closed loop at a concurrency, and whether the client kept up.

Open loop: a dispatcher sleeps until each request is due and starts it without waiting
for the ones before (a slow server makes requests queue, and the schedule-measured
latency shows it). The event loop's own lag is sampled beside it: where the dispatch lag
(sent − due) or the loop's lag has a p99 over ``lag_bound_s``, the step is client-bound
and its figures are not the server's.

Over-saturation ends a step early: once enough requests are certainly over a limit
(finished over it, or still waiting past it) that the percentile's lower bound would be
over it whatever the rest do, the step is decided; the requests still out are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from parity.model.fair import LatencyLimit
from parity.model.serving import Arrival, Load, RequestEvent, StepFigures
from parity.serving import metrics
from parity.serving.client import Endpoint, cancelled, send
from parity.serving.load import Tokenizer, schedule
from parity.stats.quantiles import lower_rank

#: how often the loop's lag and the saturation test are sampled
TICK_S = 0.005


@dataclass(kw_only=True)
class StepPlan:
    """What one step sends: ``rate`` requests/s (None: closed loop at ``concurrency``).
    ``indices`` are the load's prompts in the order sent; one may come more than once
    (a soak cycles through them)."""

    label: str
    indices: Sequence[int]
    rate: float | None = None
    #: the arrivals at ``rate`` (the load's unless given: a soak's are constant)
    arrival: Arrival | None = None
    concurrency: int = 1
    max_concurrency: int | None = None
    limits: Sequence[LatencyLimit] = ()
    lag_bound_s: float = 0.025
    early_stop: bool = True
    #: alternatives asked for with each token's log-probability (0: none; quality steps)
    logprobs: int = 0


@dataclass
class _Live:
    """What happened so far, keyed by each request's place in the step (not its prompt)."""

    origin: int
    scheduled: dict[int, int] = field(default_factory=dict)
    ready: dict[int, int] = field(default_factory=dict)
    sent: dict[int, int] = field(default_factory=dict)
    done: dict[int, RequestEvent] = field(default_factory=dict)
    lags: list[float] = field(default_factory=list)
    saturated: bool = False


def _prompt(load: Load, index: int, endpoint: Endpoint, tokenizer: Tokenizer) -> list[int] | str:
    ids = list(load.prompts[index])
    return ids if endpoint.prompt_form == "ids" else tokenizer.decode(ids)


def _over(live: _Live, limit: LatencyLimit, now: int) -> int:
    """Requests certainly over ``limit`` at ``now`` (not good ones included)."""
    cap = limit.limit_s / metrics.NS
    count = 0
    for i, due in live.scheduled.items():
        e = live.done.get(i)
        if e is not None:
            if e.status != "ok":
                count += 1
            elif limit.metric == "ttft" and e.first_ns is not None:
                count += e.first_ns - due > cap
            elif limit.metric in ("e2e", "latency") and e.end_ns is not None:
                count += e.end_ns - due > cap
        elif limit.metric in ("ttft", "e2e", "latency"):
            count += now - due > cap
    return count


def _decided(live: _Live, plan: StepPlan, n: int) -> bool:
    """Whether a limit already fails: enough requests over it that its lower bound is."""
    now = time.perf_counter_ns() - live.origin
    for limit in plan.limits:
        rank = lower_rank(n, limit.percentile / 100)
        if rank is not None and _over(live, limit, now) >= n - rank + 1:
            return True
    return False


async def _ticker(live: _Live, plan: StepPlan, n: int, stop: asyncio.Event) -> None:
    while not stop.is_set():
        before = time.perf_counter_ns()
        await asyncio.sleep(TICK_S)
        live.lags.append(max((time.perf_counter_ns() - before) * metrics.NS - TICK_S, 0.0))
        if plan.early_stop and plan.limits and _decided(live, plan, n):
            live.saturated = True
            stop.set()


async def _one(
    session: Any, endpoint: Endpoint, load: Load, tok: Tokenizer, live: _Live, plan: StepPlan,
    k: int,
) -> None:  # fmt: skip
    i = plan.indices[k]
    event = await send(
        session,
        endpoint,
        step=plan.label,
        index=i,
        prompt=_prompt(load, i, endpoint, tok),
        max_tokens=load.max_tokens[i],
        seed=load.seed,
        scheduled_ns=live.scheduled[k],
        origin_ns=live.origin,
        tokenizer=tok,
        ready_ns=live.ready.get(k),
        logprobs=plan.logprobs,
    )
    live.done[k] = event


async def _open(
    session: Any, endpoint: Endpoint, load: Load, tok: Tokenizer, plan: StepPlan, live: _Live,
    stop: asyncio.Event, tasks: list[asyncio.Task[None]],
) -> None:  # fmt: skip
    assert plan.rate is not None
    due = schedule(load, plan.rate, len(plan.indices), plan.arrival)
    slots = asyncio.Semaphore(plan.max_concurrency) if plan.max_concurrency else None
    for k, at in enumerate(due):
        wait = at - (time.perf_counter_ns() - live.origin) * metrics.NS
        if wait > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
        if stop.is_set():
            return
        live.scheduled[k] = math.floor(at / metrics.NS)
        if slots is not None:
            if slots.locked():
                await _acquire(slots, stop)
                live.ready[k] = time.perf_counter_ns() - live.origin
            else:
                await slots.acquire()
            if stop.is_set():
                return
        live.sent[k] = time.perf_counter_ns() - live.origin
        job = _one(session, endpoint, load, tok, live, plan, k)
        tasks.append(asyncio.create_task(job if slots is None else _release(job, slots)))


async def _acquire(slots: asyncio.Semaphore, stop: asyncio.Event) -> None:
    """A slot, or return when the step stops (holding nothing then)."""
    got = asyncio.create_task(slots.acquire())
    halt = asyncio.create_task(stop.wait())
    await asyncio.wait([got, halt], return_when=asyncio.FIRST_COMPLETED)
    halt.cancel()
    if not got.done():
        got.cancel()


async def _release(job: Coroutine[Any, Any, None], slots: asyncio.Semaphore) -> None:
    try:
        await job
    finally:
        slots.release()


async def _closed(
    session: Any, endpoint: Endpoint, load: Load, tok: Tokenizer, plan: StepPlan, live: _Live,
    stop: asyncio.Event,
) -> None:  # fmt: skip
    queue = list(range(len(plan.indices)))

    async def worker() -> None:
        while queue and not stop.is_set():
            k = queue.pop(0)
            live.scheduled[k] = time.perf_counter_ns() - live.origin
            await _one(session, endpoint, load, tok, live, plan, k)

    await asyncio.gather(*(worker() for _ in range(plan.concurrency)))


async def run_step(
    endpoint: Endpoint, load: Load, tokenizer: Tokenizer, plan: StepPlan
) -> tuple[StepFigures, list[RequestEvent]]:
    """Run one step to its end (or its early decision); its figures and every event."""
    import aiohttp

    live = _Live(origin=time.perf_counter_ns())
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    n = len(plan.indices)
    # no connection cap and no retries: every due request goes out at once
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, headers=endpoint.headers) as session:
        ticker = asyncio.create_task(_ticker(live, plan, n, stop))
        try:
            if plan.rate is None:
                runner = asyncio.create_task(
                    _closed(session, endpoint, load, tokenizer, plan, live, stop)
                )
            else:
                runner = asyncio.create_task(
                    _open(session, endpoint, load, tokenizer, plan, live, stop, tasks)
                )
            await runner
            pending = [t for t in tasks if not t.done()]
            if pending:
                stopper = asyncio.create_task(stop.wait())
                await asyncio.wait([*pending, stopper], return_when=asyncio.FIRST_COMPLETED)
                while not stop.is_set() and any(not t.done() for t in pending):
                    await asyncio.wait([*pending, stopper], return_when=asyncio.FIRST_COMPLETED)
                stopper.cancel()
        finally:
            stop.set()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await ticker
    events = []
    for k, i in enumerate(plan.indices):
        if k in live.done:
            events.append(live.done[k])
        elif k in live.scheduled:
            events.append(cancelled(plan.label, i, live.scheduled[k], live.sent.get(k)))
    return (
        metrics.figures(
            events,
            label=plan.label,
            rate=plan.rate,
            concurrency=None if plan.rate is not None else plan.concurrency,
            limits=plan.limits,
            loop_lags=live.lags,
            lag_bound_s=plan.lag_bound_s,
            saturated=live.saturated,
        ),
        events,
    )
