"""``metrics.json``: what a timed run measured, in seconds and bytes.

Phases apart (start and import, load, first step, warm-up, steady state), the raw step
samples, their summary, memory peaks per phase, throughput, FLOPs and MFU, and the
latency figures of generation and inference workloads. Soak, script and torchrun runs
add their own sections. A reference or scan bundle times nothing and has no metrics.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Literal

from parity.model.codec import omit_none
from parity.model.manifest import Items
from parity.model.spec import GenerateLoopName

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


#: how a device reported one memory counter: a figure, no such counter, or a counter
#: that stayed at zero while memory was in use (a placeholder, not a figure)
CounterState = Literal["reported", "absent", "zero"]
#: what the device's figures mean: a caching allocator's (allocated: bytes in tensors;
#: reserved >= allocated: bytes held from the runtime), an allocator that reports only
#: what it obtained from the runtime as "allocated" (reserved a placeholder zero), only
#: an allocated figure, or nothing
MemoryMeaning = Literal["caching", "runtime", "allocated only", "none"]


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryCounters:
    """Which memory counters a device reported over a phase, and what they mean."""

    allocated: CounterState
    reserved: CounterState
    meaning: MemoryMeaning

    @classmethod
    def of(cls, allocated: int | None, reserved: int | None) -> MemoryCounters:
        """Read from a phase's peaks: a reserved peak of zero beside memory in use is
        a placeholder (TorchNeuron's development allocator reports it so)."""
        a: CounterState = "absent" if allocated is None else "reported"
        r: CounterState = "absent" if reserved is None else "reported"
        if reserved == 0 and (allocated or 0) > 0:
            r = "zero"
        if a == "reported" and r == "reported":
            return cls(allocated=a, reserved=r, meaning="caching")
        if a == "reported" and r == "zero":
            return cls(allocated=a, reserved=r, meaning="runtime")
        return cls(allocated=a, reserved=r, meaning="allocated only" if a == "reported" else "none")


@dataclass(frozen=True, kw_only=True, slots=True)
class DevicePeaks:
    """Peak device bytes since the last reset, read after a synchronize (None: unknown, or
    a counter the device holds at zero: see ``counters``)."""

    allocated: int | None = None
    reserved: int | None = None
    #: which counters the device reported and what they mean (None: not recorded)
    counters: MemoryCounters | None = omit_none()


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
    #: those of ``per_step`` in convolutions (a counted method only): on a GPU they may run
    #: in another format than the matmuls (cuDNN's TF32), so the peak is weighted by them
    conv_per_step: float | None = omit_none()
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
    #: what a step timed: parity's own loop or the model's generate() (its words are
    #: ``definitions["loop"]``)
    loop: GenerateLoopName | None = omit_none()
    #: each steady step's token stamps (ns from the step's start), kept in a bundle so that
    #: a side's percentiles pool every repeat; a verdict keeps the figures only
    token_times_ns: tuple[tuple[int, ...], ...] | None = omit_none()
    #: in a verdict: the repeats (fresh processes) the percentiles pool
    repeats: int | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Inference:
    latency_s: Percentiles
    definitions: dict[str, str] = field(default_factory=dict)
    #: in a verdict: the repeats (fresh processes) the percentiles pool
    repeats: int | None = omit_none()


#: a side is input-bound when more than this share of its steady step goes to its inputs
INPUT_BOUND_SHARE = 0.20
InputSource = Literal["loader", "script"]


def _quartile(values: tuple[float, ...], upper: bool) -> float:
    if len(values) < 2:
        return values[0]
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return high if upper else low


@dataclass(frozen=True, kw_only=True, slots=True)
class InputPipeline:
    """The input side of the steady steps of a workload fed by a data loader.

    Raw per-step samples (seconds) are kept; every figure below them is derived, so that
    pooling repeats is concatenating samples (``pooled``) and the rule lives in one place:

    - ``input_share``: (wait + copy) / step, summed over the steady steps: the share of
      the steady wall time spent waiting for the next batch and copying it to the device;
    - ``prefetch_saving``: 1 - median prefetched step / median step, where a pass over
      batches already on the device ran; ``beyond_noise`` when the prefetched steps'
      upper quartile lies below the steps' lower quartile. Where loader-fed steps were
      taken again after the prefetched pass (``after_samples_s``: the pass bracketed in
      time), the saving is the smaller of the two and must be beyond noise against both,
      so a machine whose load changed between the steps and the pass (another job ending)
      does not read as a loader slowing the step;
    - ``input_bound``: ``input_share`` above ``threshold``, or a ``prefetch_saving`` above
      it and beyond noise (inputs that slow the step down without being waited for:
      loader workers competing with the step for the host's cores), where the loader
      works beside the step (``background`` not False: a loader that does nothing
      between two ``next()`` calls costs only its wait and copy, which are measured).
    """

    source: InputSource
    #: what each figure covers, in words
    method: str
    #: per steady step: waiting for the next batch (host), the copy to the device (with a
    #: synchronize; None: not attributed), and the whole step with both
    wait_samples_s: tuple[float, ...]
    copy_samples_s: tuple[float, ...] | None
    step_samples_s: tuple[float, ...]
    #: the same batches already on the device, stepped again (None: no such pass)
    prefetched_samples_s: tuple[float, ...] | None = None
    #: loader-fed steps again, right after the prefetched pass (None: not taken)
    after_samples_s: tuple[float, ...] | None = None
    #: whether the loader works beside the step (worker processes, memory pinning); False
    #: for a list or a DataLoader without either; None where that is not known
    background: bool | None = None
    threshold: float = INPUT_BOUND_SHARE
    steps: int = field(init=False)
    wait_s: float = field(init=False)
    copy_s: float | None = field(init=False)
    step_s: float = field(init=False)
    prefetched_s: float | None = field(init=False)
    after_s: float | None = field(init=False)
    input_share: float = field(init=False)
    prefetch_saving: float | None = field(init=False)
    beyond_noise: bool | None = field(init=False)
    input_bound: bool = field(init=False)
    #: one sentence: the decision and the figure behind it
    reason: str = field(init=False)

    def __post_init__(self) -> None:
        wait, copy, step = self.wait_samples_s, self.copy_samples_s, self.step_samples_s
        if not step or len(wait) != len(step) or (copy is not None and len(copy) != len(step)):
            raise ValueError("input pipeline samples: one wait, copy and step per steady step")
        spent = sum(wait) + (sum(copy) if copy is not None else 0.0)
        share = spent / sum(step) if sum(step) > 0 else 0.0
        step_s = statistics.median(step)
        prefetched = self.prefetched_samples_s or None
        saving = beyond = None
        if prefetched is not None and step_s > 0:
            references = (step, self.after_samples_s) if self.after_samples_s else (step,)
            top = _quartile(prefetched, upper=True)
            fast = statistics.median(prefetched)
            saving = min(1 - fast / max(statistics.median(r), 1e-12) for r in references)
            beyond = all(top < _quartile(r, upper=False) for r in references)
        slowed = (
            saving is not None
            and saving > self.threshold
            and bool(beyond)
            and self.background is not False
        )
        bound = share > self.threshold or slowed
        what = "waiting for and copying inputs" if copy is not None else "waiting for inputs"
        if share > self.threshold:
            reason = f"input-bound: {share:.0%} of the steady step is {what}"
        elif slowed:
            reason = (
                f"input-bound: the step with inputs prefetched on the device is {saving:.0%} "
                f"shorter (only {share:.0%} of the step is {what})"
            )
        else:
            reason = f"not input-bound: {share:.0%} of the steady step is {what}"
        reason += f" (input-bound above {self.threshold:.0%})"
        values = {
            "steps": len(step),
            "wait_s": statistics.median(wait),
            "copy_s": statistics.median(copy) if copy is not None else None,
            "step_s": step_s,
            "prefetched_s": statistics.median(prefetched) if prefetched is not None else None,
            "after_s": statistics.median(self.after_samples_s) if self.after_samples_s else None,
            "input_share": share,
            "prefetch_saving": saving,
            "beyond_noise": beyond,
            "input_bound": bound,
            "reason": reason,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @classmethod
    def pooled(cls, items: tuple[InputPipeline, ...]) -> InputPipeline | None:
        """Several repeats' samples as one (None when there are none); a part that one
        repeat lacks (copy, prefetched) is left out of the pool."""
        if not items:
            return None
        copies = [i.copy_samples_s for i in items]
        prefetched = [i.prefetched_samples_s for i in items]
        after = [i.after_samples_s for i in items]
        return cls(
            source=items[0].source,
            method=items[0].method,
            wait_samples_s=tuple(x for i in items for x in i.wait_samples_s),
            copy_samples_s=None
            if any(c is None for c in copies)
            else tuple(x for c in copies for x in c or ()),
            step_samples_s=tuple(x for i in items for x in i.step_samples_s),
            prefetched_samples_s=None
            if any(p is None for p in prefetched)
            else tuple(x for p in prefetched for x in p or ()),
            after_samples_s=None
            if any(a is None for a in after)
            else tuple(x for a in after for x in a or ()),
            background=items[0].background,
            threshold=items[0].threshold,
        )


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
    #: workloads fed by a data loader (``make_loader``, a script's ``DataLoader``)
    input_pipeline: InputPipeline | None = omit_none()
    #: nanoseconds the steps' intra-op threads took to share a small add, timed right
    #: after the steps (``probes.handoff``): where the host placed them; None with one
    #: thread, or on a device whose steps do not run on the host's cores
    thread_handoff_ns: float | None = omit_none()
    #: seconds the process's threads waited for a core per second of its steps (after the
    #: first): other work holding the cores, as this process paid for it
    #: (``probes.waiting``); None where the kernel does not say
    waited_share: float | None = omit_none()

    @property
    def steady_samples(self) -> tuple[float, ...]:
        return self.step_samples_s[self.steady_from_step :]

    @property
    def median_step_s(self) -> float | None:
        return self.summary.median if self.summary is not None else None
