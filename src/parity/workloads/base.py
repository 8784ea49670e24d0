"""The Workload protocol: a frozen model, frozen data, and the unit of work to time.

A workload is built from a ``WorkloadSpec`` (name, size and knobs). parity builds its
model on the CPU from the seed, stores weights and data as safetensors, and every side
loads exactly those bytes (``parity.workloads.frozen``). On a side, the worker moves the
model and data to the device and calls ``make_runner``; the runner's ``step(i)`` is the
timed unit of work and ``finish()`` (not timed) returns what the numerics compare.

Writing a workload: subclass ``Workload``, set ``name``, ``kind``, ``description`` and
``sizes`` (per size: the architecture config plus ``batch_size``, ``steps`` and, for
sequence models, ``seq_len``), implement ``build_model``, ``make_data`` and
``make_runner``, and register it with ``parity.workloads.register_workload``.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast, get_args

import torch
from torch import nn

from parity.errors import WorkloadError
from parity.model.numerics import OutputKind
from parity.model.numerics import output_kind as kind_of_name
from parity.model.spec import GenerateLoopName, SideSpec, WorkloadSpec
from parity.model.workload import CodeSource, Kind, QualitySpec, Sources, WorkloadDescription
from parity.workloads.datasource import takes_no_data

KINDS = ("train", "infer", "generate")
#: a batch as a data loader delivers it: tensors by name (CPU, then the side's device)
Batch = Mapping[str, torch.Tensor]
#: one setting of a size: an architecture knob, ``batch_size``, ``steps`` or ``seq_len``
Knob = int | float | str | bool
#: per size name (``tiny``, ``small``, ``base``): its settings by name
SizeTable = dict[str, dict[str, Knob]]


def output_kind(name: str, tensor: torch.Tensor) -> OutputKind:
    """The kind of an output named by convention: ``*logits``, ``*embeddings``, ``loss``
    and integer tensors (tokens); anything else is a hidden state."""
    return kind_of_name(name, floating=tensor.is_floating_point())


@dataclass(kw_only=True)
class RunContext:
    """What a runner needs from the side it runs on."""

    device: torch.device
    side: SideSpec
    autocast_type: str
    compile_fn: Callable[[nn.Module], nn.Module] = field(default=lambda m: m)
    synchronize: Callable[[], None] = field(default=lambda: None)
    #: generate workloads: the baseline's tokens of every prompt (prompts x new tokens), to
    #: score teacher-forced after the run as well as the side's own (None: none handed)
    forced: torch.Tensor | None = None

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """Autocast for the side's precision; a no-op for fp32."""
        if self.side.precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.side.precision == "bf16" else torch.float16
        return torch.autocast(device_type=self.autocast_type, dtype=dtype)


@dataclass(kw_only=True)
class RunNumerics:
    """What a run produced, for the numerics comparison: CPU tensors and floats."""

    losses: list[float] = field(default_factory=list)
    outputs: dict[str, torch.Tensor] = field(default_factory=dict)
    #: a kind per output where its name does not say it (see ``output_kind``)
    kinds: dict[str, OutputKind] = field(default_factory=dict)
    #: generated tokens' top-2 logits margins per position, by the tokens' output name
    margins: dict[str, torch.Tensor] = field(default_factory=dict)

    def kind(self, name: str) -> OutputKind:
        return self.kinds.get(name) or output_kind(name, self.outputs[name])


#: the rows a built-in's evaluation output covers where its data holds them: a top-1
#: gate decides on 299 decisive rows (``parity.judge.agreement.required_rows`` at 99%),
#: and rows whose top-2 margin is a near-tie do not count
EVAL_ROWS = 512


class StepRunner(ABC):
    """Runs the workload's unit of work on one side."""

    @abstractmethod
    def step(self, i: int) -> None:
        """One timed unit of work (a training step, a batch, a generation)."""

    @abstractmethod
    def finish(self) -> RunNumerics:
        """After the timed steps: bring results to the CPU (not timed)."""

    #: whether the steps change what ``finish`` returns (training changes the weights; a
    #: runner that overrides this to False returns the same from ``finish`` after one step
    #: as after all: inference and generation read the unchanged model). A whole-run
    #: reference runs the workload's every step only where they do
    #: (``reference_steps``): a 135M model's fp64 steps are minutes each
    steps_change_outputs: ClassVar[bool] = True

    def reference_steps(self, steps: int) -> int:
        """How many of the workload's ``steps`` a whole-run reference (the fp64 reference,
        the expected-error run) runs: all where they change what ``finish`` returns,
        else one (its time is the reference's cost per step in its metrics)."""
        return steps if self.steps_change_outputs else min(steps, 1)

    def finish_timing(self) -> RunNumerics:
        """``finish`` for a process after the side's quality run, or a compliance run
        (``Job.timing_only``): runners whose ``finish`` does more work than handing over
        what the steps produced return only that here (the default: ``finish``)."""
        return self.finish()

    def position_logits(
        self, sequence: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """For a runner whose top-1 gate covers every position of every prompt (a
        generation loop's): the first batch of prompts with its own greedy tokens
        (``sequence`` where given) and the logits at each of its positions, teacher-forced
        in this runner's context, in float64 on the CPU. None for other runners."""
        return None

    @property
    def prompt_batches(self) -> int:
        """The batches of prompts ``finish`` scores every position of (see
        ``position_logits``)."""
        return 0

    @property
    def prompt_length(self) -> int:
        """The positions of a prompt: the last one's logits are the prefill logits the
        run records (``prefill_logits``), which the near-tie margin reads."""
        return 0

    def finish_cost_s(self, step_s: float) -> tuple[float, float]:
        """For the pre-run estimate, called after a step ran, given one step's seconds:
        what ``finish`` costs beyond handing over what the steps produced, and what it
        costs more where the baseline's tokens are handed over to score (``ctx.forced``),
        seconds. A runner may time a little of that work here. The default: nothing."""
        return 0.0, 0.0

    def step_batch(self, i: int, batch: dict[str, torch.Tensor]) -> None:
        """Step ``i`` on ``batch``: named tensors a workload's loader (``make_loader``)
        delivered, already copied to the side's device. Runners of workloads with a
        loader implement it (``NamedInferRunner`` and ``NamedTrainRunner`` do); ``step(i)``
        stays the step on batch ``i`` of the frozen data, which soak runs, checks, the op
        scan and FLOP counting use."""
        raise NotImplementedError(
            f"{type(self).__name__} takes no batches from a loader: implement "
            "step_batch(i, batch), or use NamedInferRunner or NamedTrainRunner"
        )

    def token_times_ns(self) -> list[list[int]] | None:
        """Generation only: per step, each token's time since the step began (ns)."""
        return None


def takes_batches(runner: StepRunner) -> bool:
    """Whether the runner implements ``step_batch`` (a loader can feed it)."""
    return type(runner).step_batch is not StepRunner.step_batch


class Workload(ABC):
    """A frozen workload: model, data and step, built from a spec."""

    name: ClassVar[str]
    kind: ClassVar[str]
    description: ClassVar[str]
    #: per size: architecture config plus batch_size, steps and (optionally) seq_len
    sizes: ClassVar[SizeTable]
    #: whether the workload reads ``--data`` (``spec.data``); others refuse it
    takes_data: ClassVar[bool] = False
    #: whether ``--task`` means anything to it (``hf:PATH`` checkpoints)
    takes_task: ClassVar[bool] = False
    #: the generation loops it can time (``--generate-loop``): none but a generator's
    generate_loops: ClassVar[tuple[GenerateLoopName, ...]] = ()
    #: a training workload's optimizer, by ``parity.model.fair.OPTIMIZER_STATE_BYTES``
    #: name (what the memory projection counts optimizer states by)
    optimizer_kind: ClassVar[str | None] = None
    #: a user's workload file: the code it runs and the environment variables it reads
    #: (set by the registry when it imports the file; the fingerprint's ``code`` part)
    code_source: CodeSource | None = None

    def __init__(self, spec: WorkloadSpec) -> None:
        if spec.data is not None and not self.takes_data:
            raise takes_no_data(self.name)
        if spec.task is not None and not self.takes_task:
            raise WorkloadError(
                f"workload {self.name} takes no --task: --task is for checkpoints (hf:PATH)"
            )
        self._check_loop(spec)
        if spec.size not in self.sizes:
            raise WorkloadError(
                f"workload {self.name} has no size {spec.size!r}: use one of "
                f"{', '.join(self.sizes)}"
            )
        table = dict(self.sizes[spec.size])
        self.spec = spec
        self.batch_size: int = int(spec.batch_size or table.pop("batch_size"))
        self.steps: int = int(spec.steps or table.pop("steps"))
        seq = table.pop("seq_len", None)
        default_seq = None if seq is None else int(seq)
        table.pop("batch_size", None)
        table.pop("steps", None)
        if spec.seq_len is not None and default_seq is None:
            raise WorkloadError(f"workload {self.name} has no sequence: drop --seq-len")
        self.seq_len: int | None = spec.seq_len or default_seq
        for key, value in spec.overrides:
            if key not in table:
                raise WorkloadError(
                    f"workload {self.name} has no setting {key!r}: use one of "
                    f"{', '.join(sorted(table))}"
                )
            table[key] = type(table[key])(value)
        self.config: dict[str, Any] = table
        self.seed = spec.seed
        self.validate()

    def _check_loop(self, spec: WorkloadSpec) -> None:
        if spec.generate_loop is None or spec.generate_loop in self.generate_loops:
            return
        if not self.generate_loops:
            raise WorkloadError(
                f"workload {self.name} does not generate: --generate-loop is for generation "
                "workloads (hf:ARCH-generate, hf:PATH --task generate)"
            )
        raise WorkloadError(
            f"workload {self.name} has no generate() of its own: --generate-loop "
            f"{spec.generate_loop} needs a transformers model (hf:gpt2-generate, hf:PATH "
            f"--task generate); use one of {', '.join(self.generate_loops)}"
        )

    def validate(self) -> None:  # noqa: B027 - optional hook, empty by design
        """Check the resolved config; raise WorkloadError naming the knob."""

    # -- what subclasses implement ----------------------------------------------------
    @abstractmethod
    def build_model(self) -> nn.Module:
        """The model in fp32 on the CPU; called under ``torch.manual_seed(seed)``."""

    def initial_model(self) -> nn.Module:
        """The model whose weights are frozen (under the seed); ``build_model`` by default.
        A checkpoint loads its weights here and builds an empty model in ``build_model``,
        which every side then fills with the frozen weights."""
        return self.build_model()

    @abstractmethod
    def make_data(self) -> dict[str, torch.Tensor]:
        """The data as CPU tensors; called under ``torch.manual_seed(seed + 1)``."""

    @abstractmethod
    def make_runner(
        self, model: nn.Module, data: dict[str, torch.Tensor], ctx: RunContext
    ) -> StepRunner:
        """A runner for one side; ``model`` and ``data`` are already on the device."""

    def make_loader(self, data: dict[str, torch.Tensor]) -> Iterable[Batch] | None:
        """The workload's input pipeline, or None (the default: each step picks its batch
        from the frozen data already on the device).

        ``data`` is the frozen data on the CPU (this process's shard under torchrun);
        return a ``torch.utils.data.DataLoader`` (workers, pinned memory, a collate that
        decodes or augments) or any iterable of batches, each a dict of named CPU tensors.
        parity times, per step, the wait for the next batch, its copy to the device and
        the step on it (``runner.step_batch``), then steps again over a few of the same
        batches already on the device (``parity.probes.pipeline``). An exhausted loader
        starts again (a new epoch, counted in the wait). Keep the order deterministic
        (no shuffle, or a generator seeded from ``self.seed``) so both sides see the same
        batches.
        """
        return None

    def probe(self, model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Outputs of one forward pass on the first batch, for the numerics probe.

        Return named tensors (e.g. ``logits``); a training workload also returns ``loss``,
        a scalar that the probe backpropagates to compare gradients. The probe runs it
        under the side's autocast on fresh frozen weights, and once in fp64 on the CPU as
        the reference. Workloads without a probe get no fp64 gate (the verdict says so).
        """
        raise NotImplementedError(f"workload {self.name} defines no numerics probe")

    def items_per_step(self) -> dict[str, int]:
        """How many samples and tokens one step processes (for throughput)."""
        tokens = self.batch_size * self.seq_len if self.seq_len else 0
        return {"samples": self.batch_size, "tokens": tokens}

    def quality(self) -> QualitySpec:
        """The quality checks this workload's verdict applies (part of the fingerprint)."""
        checks = ("final_loss", "outputs") if self.kind == "train" else ("outputs",)
        return QualitySpec(kind=_kind(self.name, self.kind), checks=checks)

    def sources(self) -> Sources:
        """Digests of the files the workload reads (a checkpoint, a data file), by the
        fingerprint part they feed: they enter that part and the frozen cache's key, so a
        changed byte is never served from the cache."""
        return Sources()

    @property
    def batches_follow_steps(self) -> bool:
        """The data holds one batch a step (more ``--steps``, more batches: a checkpoint's
        prompts, ``--data``); False where the steps cycle through a fixed set."""
        return False

    # -- derived ----------------------------------------------------------------------
    def describe(self) -> WorkloadDescription:
        """Everything that defines this workload (enters the fingerprint)."""
        quality = self.quality()
        sources = self.sources()
        config = self.config
        if self.spec.loop != "parity":  # another unit of work is timed: another workload
            config = {**config, "generate_loop": self.spec.loop}
        return WorkloadDescription(
            name=self.name,
            kind=_kind(self.name, self.kind),
            size=self.spec.size,
            config=config,
            batch_size=self.batch_size,
            seq_len=self.seq_len,
            steps=self.steps,
            seed=self.seed,
            quality=quality,
            sources=sources if sources != Sources() else None,
            code=self.code_source,
            data_file=self.spec.data,
            parameters=self._parameters(),
            optimizer=self.optimizer_kind if self.kind == "train" else None,
        )

    def _parameters(self) -> int | None:
        """The parameter count, or None where the model cannot be built on the meta
        device (a model whose construction reads real tensors)."""
        try:
            return self.parameter_count()
        except (RuntimeError, NotImplementedError, TypeError, ValueError):
            return None

    def parameter_count(self) -> int:
        """Parameters of the model, counted on the meta device (no memory, no init)."""
        with torch.device("meta"):
            model = self.build_model()
        return sum(p.numel() for p in model.parameters())


def _kind(name: str, kind: str) -> Kind:
    for known in get_args(Kind):
        if kind == known:
            return cast(Kind, known)
    raise WorkloadError(f"workload {name} has kind {kind!r}: use one of {', '.join(KINDS)}")


def batches(data: torch.Tensor, i: int) -> torch.Tensor:
    """Batch ``i`` of a ``[n_batches, ...]`` tensor, cycling."""
    return data[i % data.shape[0]]


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed the CPU generator for a block and restore its state afterwards."""
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        yield
    finally:
        torch.random.set_rng_state(state)
