"""``metrics.json``: what a timed run measured, in seconds and bytes.

Phases apart (start and import, load, first step, warm-up, steady state), the raw step
samples, their summary, memory peaks per phase, throughput, FLOPs and MFU, and the
latency figures of generation and inference workloads. Soak, script and torchrun runs
add their own sections. A reference or scan bundle times nothing and has no metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.codec import omit_none
from parity.model.manifest import Items

# the statistics' own classes, written as they are (their judgements are derived fields)
from parity.stats import SteadyState as SteadyState
from parity.stats import Summary as Summary


@dataclass(frozen=True, kw_only=True, slots=True)
class Phases:
    """Seconds spent in each phase of a run (steps counted where the phase has steps)."""

    #: parent's launch to ready: interpreter start, imports, device init, settings
    start_import_s: float | None = None
    #: the worker module's first line to ready
    worker_import_s: float | None = None
    load_s: float | None = None
    first_step_s: float
    warmup_s: float = 0.0
    warmup_steps: int = 0
    steady_s: float = 0.0
    steady_steps: int = 0
    #: script mode: the script's end after its last step, and its whole run
    after_steps_s: float | None = omit_none()
    script_s: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Throughput:
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    #: script mode, which knows neither samples nor tokens
    steps_per_s: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class DevicePeaks:
    """Peak device bytes since the last reset, read after a synchronize (None: unknown)."""

    allocated: int | None = None
    reserved: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryPhase:
    device: DevicePeaks = field(default_factory=DevicePeaks)
    host_peak_rss: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Memory:
    """Memory peaks per phase: load, the first step (compile, graph capture), the rest."""

    load: MemoryPhase | None = omit_none()
    first_step: MemoryPhase | None = omit_none()
    steps: MemoryPhase


@dataclass(frozen=True, kw_only=True, slots=True)
class Peak:
    """A device's peak FLOP/s for a dtype, per framework device, with its source."""

    device: str
    dtype: str
    flops: float
    source: str | None = None
    source_url: str | None = None
    date: str | None = None
    #: what one framework device is for this figure (a GPU, a logical NeuronCore)
    unit: str | None = omit_none()


FlopMethod = Literal["meta", "cpu", "estimate"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FlopAttempt:
    """A way of counting FLOPs that failed (or was skipped), and why."""

    method: FlopMethod
    error: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Flops:
    """Model FLOPs per step, how they were found, and what they achieved."""

    per_step: float | None
    #: how they were counted, in words
    method: str
    #: why there is no count (every method failed)
    error: str | None = omit_none()
    #: the method that gave ``per_step`` (see ``parity.probes.flops``)
    method_name: FlopMethod | None = omit_none()
    #: each method that failed before it, with its reason
    tried: tuple[FlopAttempt, ...] | None = omit_none()
    achieved_flops: float | None = None
    mfu: float | None = None
    peak: Peak | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Percentiles:
    """Percentiles of a latency (seconds) or rate, with the number of values behind them."""

    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None
    n: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Generation:
    """Generation latency over the steady steps: time to first token, per output token,
    between tokens and end to end, and the output token rate."""

    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    output_tokens_per_s: Percentiles
    output_tokens: int
    requests_per_step: int
    definitions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class Inference:
    latency_s: Percentiles
    definitions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptFigures:
    """Script mode: what the wrapper saw of the script's steps."""

    optimizer_steps: dict[str, int]
    timed_steps: int
    backward_calls: int
    step: str


@dataclass(frozen=True, kw_only=True, slots=True)
class SoakWindow:
    t_s: float
    end_s: float
    steps: int
    median_s: float
    mean_s: float
    max_s: float
    ttft_median_s: float | None
    host_rss: int | None
    device_allocated: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class SoakFigures:
    duration_s: float
    window_s: float
    steps: int
    first_step_s: float
    step_samples_every: int
    rss_source: str | None
    windows: tuple[SoakWindow, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class RankFigures:
    rank: int
    median_step_s: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class AllReduce:
    share: float | None
    method: str
    step_with_allreduce_s: float | None = omit_none()
    step_without_allreduce_s: float | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class DistributedFigures:
    rank: int
    world_size: int
    local_rank: int
    backend: str
    per_rank: tuple[RankFigures, ...]
    allreduce: AllReduce


@dataclass(frozen=True, kw_only=True, slots=True)
class Metrics:
    """What a timed run measured."""

    units: Literal["seconds"] = "seconds"
    phases: Phases
    steady_state: SteadyState | None
    #: samples from this step on are steady (step 0 is the first step, always apart)
    steady_from_step: int
    step_samples_s: tuple[float, ...]
    summary: Summary | None
    noise_warnings: tuple[str, ...] = ()
    items_per_step: Items | None = None
    throughput: Throughput = field(default_factory=Throughput)
    memory: Memory
    flops: Flops | None = omit_none()
    generation: Generation | None = omit_none()
    inference: Inference | None = omit_none()
    script: ScriptFigures | None = omit_none()
    soak: SoakFigures | None = omit_none()
    distributed: DistributedFigures | None = omit_none()

    @property
    def steady_samples(self) -> tuple[float, ...]:
        return self.step_samples_s[self.steady_from_step :]

    @property
    def median_step_s(self) -> float | None:
        return self.summary.median if self.summary is not None else None
