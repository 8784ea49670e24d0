"""A side's latency figures pooled over its repeats, as the speed ratio pools them."""

from __future__ import annotations

from dataclasses import replace

from parity.model.bundle import Bundle
from parity.model.metrics import Generation, Inference
from parity.probes.latency import generation_metrics, percentiles


def pooled_generation(bundles: tuple[Bundle, ...]) -> Generation | None:
    """A side's generation latency over the steady steps of every repeat (the repeats the
    speed ratio pools), from the token stamps each bundle keeps; the first repeat's own
    figures where a bundle lacks them (written before they were kept)."""
    found = [b.metrics.generation for b in bundles if b.metrics and b.metrics.generation]
    if not found:
        return None
    first = found[0]
    if len(found) == 1 or any(g.token_times_ns is None for g in found):
        return replace(first, token_times_ns=None, repeats=1)
    stamps = [step for g in found for step in (g.token_times_ns or ())]
    pooled = generation_metrics(stamps, first.requests_per_step)
    return replace(pooled, definitions=first.definitions, loop=first.loop, repeats=len(found))


def pooled_inference(bundles: tuple[Bundle, ...]) -> Inference | None:
    """A side's step latency over the steady steps of every repeat."""
    found = [b.metrics for b in bundles if b.metrics and b.metrics.inference]
    if not found:
        return None
    first = found[0].inference
    assert first is not None
    samples = [x for m in found for x in m.steady_samples]
    return replace(first, latency_s=percentiles(samples), repeats=len(found))
