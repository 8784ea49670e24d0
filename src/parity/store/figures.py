"""What the index keeps of a bundle and a comparison: the figures ``parity trend``
follows, by name, each with how to read it from the metrics and what it is."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from parity.bundle import Bundle
from parity.model.metrics import Metrics

#: comparison-level figures that ``trend`` reads from the comparisons table
COMPARISON_METRICS = {
    "speed_ratio": "target/baseline median step time",
    "speedup": "baseline/target median step time",
    "speed_low": "lower end of the ratio's interval",
    "speed_high": "upper end of the ratio's interval",
}
Figure = Callable[[Metrics], "float | int | None"]


def _latency(m: Metrics, q: str) -> float | None:
    return getattr(m.inference.latency_s, q) if m.inference else None


def _generation(m: Metrics, what: str, q: str) -> float | None:
    return getattr(getattr(m.generation, f"{what}_s"), q) if m.generation else None


#: bundle-level figures: name -> (how to read it from the metrics, what it is)
BUNDLE_METRICS: dict[str, tuple[Figure, str]] = {
    "median_step_s": (lambda m: m.summary.median if m.summary else None, "median steady step"),
    "iqr_s": (lambda m: m.summary.iqr if m.summary else None, "IQR of the steady steps"),
    "samples_per_s": (lambda m: m.throughput.samples_per_s, "throughput, samples"),
    "tokens_per_s": (lambda m: m.throughput.tokens_per_s, "throughput, tokens"),
    "start_import_s": (lambda m: m.phases.start_import_s, "process start and import"),
    "load_s": (lambda m: m.phases.load_s, "load and move to the device"),
    "first_step_s": (lambda m: m.phases.first_step_s, "first step (compile, capture)"),
    "warmup_s": (lambda m: m.phases.warmup_s, "warm-up until steady"),
    "host_peak_rss": (lambda m: m.memory.steps.host_peak_rss, "host peak RSS, bytes"),
    "device_peak_allocated": (lambda m: m.memory.steps.device.allocated, "bytes"),
    "device_peak_reserved": (lambda m: m.memory.steps.device.reserved, "bytes"),
    "achieved_flops": (lambda m: m.flops.achieved_flops if m.flops else None, "FLOP/s"),
    "mfu": (lambda m: m.flops.mfu if m.flops else None, "model FLOPs utilisation"),
}
for _q in ("p50", "p90", "p99"):
    BUNDLE_METRICS[f"latency_{_q}_s"] = (partial(_latency, q=_q), f"step latency {_q}")
    for _m in ("ttft", "tpot", "itl", "e2e"):
        BUNDLE_METRICS[f"{_m}_{_q}_s"] = (
            partial(_generation, what=_m, q=_q),
            f"{_m.upper()} {_q}",
        )


def bundle_metrics(bundle: Bundle) -> dict[str, float]:
    """The figures of an ``ok`` bundle that ``trend`` can follow, by name."""
    if not bundle.ok or bundle.metrics is None:
        return {}
    out = {}
    for name, (read, _) in BUNDLE_METRICS.items():
        value = read(bundle.metrics)
        if value is not None:
            out[name] = float(value)
    return out
