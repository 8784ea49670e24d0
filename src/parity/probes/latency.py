"""Latency figures for inference and generation, with the definitions reports state.

- TTFT: time from request start to the first generated token.
- TPOT per request: (end-to-end latency - TTFT) / (output tokens - 1).
- ITL: every gap between consecutive tokens, pooled over requests.
- End-to-end latency: request start to the last token.
- Output tokens/s: output tokens of a step / its end-to-end latency.

A step of a generation workload is one batch of requests decoded together, so every
request of the batch has the same token times.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from parity.model.metrics import Generation, Inference, Percentiles
from parity.model.spec import GenerateLoopName

QUANTILES = (50, 90, 99)
DEFINITIONS = {
    "ttft": "time from request start to the first generated token",
    "tpot": "(end-to-end latency - TTFT) / (output tokens - 1), per request",
    "itl": "every gap between consecutive tokens, pooled over requests",
    "e2e": "request start to the last token",
    "latency": "one step (a batch) from start to synchronised end",
}


def percentiles(values: Sequence[float]) -> Percentiles:
    if len(values) == 0:
        return Percentiles(p50=None, p90=None, p99=None, mean=None, n=0)
    x = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = (float(v) for v in np.percentile(x, QUANTILES))
    return Percentiles(p50=p50, p90=p90, p99=p99, mean=float(x.mean()), n=int(x.size))


def generation_samples(
    token_times_ns: Sequence[Sequence[int]], batch_size: int
) -> dict[str, list[float]]:
    """Each metric's samples (seconds; output tokens/s) over the given steps."""
    out: dict[str, list[float]] = {k: [] for k in ("ttft", "tpot", "itl", "e2e", "rate")}
    for stamps in token_times_ns:
        if not stamps:
            continue
        s = [t * 1e-9 for t in stamps]
        out["ttft"].append(s[0])
        out["e2e"].append(s[-1])
        if len(s) > 1:
            out["tpot"].append((s[-1] - s[0]) / (len(s) - 1))
            out["itl"].extend(b - a for a, b in itertools.pairwise(s))
        if s[-1] > 0:
            out["rate"].append(batch_size * len(s) / s[-1])
    return out


def generation_metrics(
    token_times_ns: Sequence[Sequence[int]],
    batch_size: int,
    *,
    loop: tuple[GenerateLoopName, str] | None = None,
) -> Generation:
    """Figures over the given steps (pass the steady-state steps only); ``loop`` names
    the generation loop that ran and says what it times."""
    samples = generation_samples(token_times_ns, batch_size)
    return Generation(
        ttft_s=percentiles(samples["ttft"]),
        tpot_s=percentiles(samples["tpot"]),
        itl_s=percentiles(samples["itl"]),
        e2e_s=percentiles(samples["e2e"]),
        output_tokens_per_s=percentiles(samples["rate"]),
        output_tokens=len(token_times_ns[0]) if token_times_ns else 0,
        requests_per_step=batch_size,
        definitions={
            **{k: DEFINITIONS[k] for k in ("ttft", "tpot", "itl", "e2e")},
            **({"loop": f"{loop[0]}: {loop[1]}"} if loop is not None else {}),
        },
        loop=loop[0] if loop is not None else None,
    )


def step_latency(samples_s: Sequence[float]) -> Inference:
    return Inference(
        latency_s=percentiles(samples_s), definitions={"latency": DEFINITIONS["latency"]}
    )
