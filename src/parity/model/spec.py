"""Side specs and workload specs: the two inputs every comparison starts from.

A side spec is ``DEVICE[:INDEX][+OPTION...]``, for example ``cpu``, ``cuda:1``,
``neuron+bf16+compile=neuron``, ``cpu+threads=1``. Options:

- a precision: ``fp32`` (default), ``bf16`` or ``fp16`` (autocast for the device type);
- ``compile`` or ``compile=BACKEND`` (``torch.compile``; the device adapter's default
  backend when none is named), and ``compile-mode=MODE`` (its ``mode``: a backend that
  ignores modes, such as ``neuron``, runs the default, and the run records so);
- ``threads=N`` (``torch.set_num_threads``);
- ``deterministic`` (``torch.use_deterministic_algorithms(True)``);
- ``emulate=PROFILE`` (a precision profile, see ``parity.probes``);
- ``autocast=POLICY`` (the CPU only, with a reduced precision: another device type's
  autocast op lists, ``cuda``, reproduced on the CPU; see ``parity.probes.autocast_policy``);
- ``nproc=N`` (a torchrun job of N processes, DDP by default) and ``fsdp`` (FSDP2).

Parsing never touches a device: it only checks names against the device registry.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from parity.errors import SpecError
from parity.model.codec import omit_none

Precision = Literal["fp32", "bf16", "fp16"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
EMULATE_PROFILES = ("matmul-bf16", "matmul-tf32", "matmul-fp16")
#: ``torch.compile``'s modes (``compile-mode=MODE``)
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: the autocast policies a CPU side may reproduce (``autocast=cuda``): CUDA's op lists,
#: which TorchNeuron registers for ``neuron`` too
AUTOCAST_POLICIES = ("cuda",)
SIZES = ("tiny", "small", "base")
#: device types whose steps run on the host's cores: their intra-op threads (``threads=N``)
#: share those cores with every other process on the machine
HOST_COMPUTE = frozenset({"cpu"})
#: what a checkpoint workload (``hf:PATH``) does with its model; see ``--task``
Task = Literal["train", "generate", "infer", "embed", "classify"]
TASKS: tuple[Task, ...] = get_args(Task)
#: what a generation step times (``--generate-loop``): parity's own decoding loop, one
#: forward per token with the model's key/value cache (``parity``, the default), or the
#: model's own ``generate()`` (``hf``, transformers models), each token stamped after a
#: synchronize either way
GenerateLoopName = Literal["parity", "hf"]
GENERATE_LOOPS: tuple[GenerateLoopName, ...] = get_args(GenerateLoopName)
OPTIONS = (
    "fp32",
    "bf16",
    "fp16",
    "compile[=BACKEND]",
    "compile-mode=MODE",
    "threads=N",
    "deterministic",
    "emulate=PROFILE",
    "autocast=POLICY",
    "nproc=N",
    "fsdp",
)

#: the fields of a side spec, in order (what may differ between the sides)
SIDE_FIELDS = (
    "device",
    "index",
    "precision",
    "compile",
    "compile_backend",
    "threads",
    "deterministic",
    "emulate",
    "nproc",
    "fsdp",
    "autocast",
    "compile_mode",
)
_DEVICE_RE = re.compile(r"(?P<type>[a-z][a-z0-9_]*)(?::(?P<index>[0-9]+))?", re.ASCII)


@dataclass(frozen=True, kw_only=True, slots=True)
class SideSpec:
    """One side of a comparison: a device and how the workload runs on it.

    Parsed once from its string (``parse_side``); from there every layer, the documents
    included, carries this object. In JSON it is its fields, with ``spec``, the string
    it writes as, first for readers (derived: decoding rebuilds it from the fields)."""

    spec: str = field(init=False)
    device: str
    index: int | None = None
    precision: Precision = "fp32"
    compile: bool = False
    compile_backend: str | None = None
    threads: int | None = None
    deterministic: bool = False
    emulate: str | None = None
    nproc: int | None = None
    fsdp: bool = False
    #: another device type's autocast op lists, reproduced on the CPU (None: the device's own)
    autocast: str | None = omit_none()
    #: ``torch.compile``'s mode (None: its default)
    compile_mode: str | None = omit_none()

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise SpecError(
                f"precision {self.precision!r} is unknown: use one of {', '.join(PRECISIONS)}"
            )
        if self.threads is not None and self.threads < 1:
            raise SpecError(f"threads={self.threads} must be at least 1")
        if self.emulate is not None and self.emulate not in EMULATE_PROFILES:
            raise SpecError(
                f"emulate={self.emulate} is unknown: use one of {', '.join(EMULATE_PROFILES)}"
            )
        if self.nproc is not None and self.nproc < 1:
            raise SpecError(f"nproc={self.nproc} must be at least 1")
        if self.fsdp and (self.nproc or 1) < 2:
            raise SpecError("fsdp shards over processes: add nproc=N with N >= 2")
        if self.compile_backend is not None and not self.compile:
            raise SpecError("compile_backend is set but compile is off: write compile=BACKEND")
        if self.autocast is not None:
            self._check_autocast()
        if self.compile_mode is not None and (
            not self.compile or self.compile_mode not in COMPILE_MODES
        ):
            raise SpecError(
                f"compile-mode={self.compile_mode} needs +compile and one of "
                f"{', '.join(COMPILE_MODES)}"
            )
        object.__setattr__(self, "spec", self._text())

    def _check_autocast(self) -> None:
        if self.autocast not in AUTOCAST_POLICIES:
            raise SpecError(
                f"autocast={self.autocast} is unknown: use one of {', '.join(AUTOCAST_POLICIES)} "
                "(the CPU's own policy needs no option)"
            )
        if self.device != "cpu" or self.precision == "fp32":
            raise SpecError(
                f"autocast={self.autocast} reproduces another device's autocast on the CPU: it "
                "needs device cpu and a reduced precision, e.g. cpu+bf16+autocast=cuda"
            )

    @property
    def device_string(self) -> str:
        """The string ``torch.device`` takes, e.g. ``cuda:1``."""
        return self.device if self.index is None else f"{self.device}:{self.index}"

    def __str__(self) -> str:
        return self.spec

    def _text(self) -> str:
        parts = [self.device_string]
        if self.precision != "fp32":
            parts.append(self.precision)
        if self.compile:
            parts.append(f"compile={self.compile_backend}" if self.compile_backend else "compile")
        if self.compile_mode:
            parts.append(f"compile-mode={self.compile_mode}")
        if self.threads is not None:
            parts.append(f"threads={self.threads}")
        if self.deterministic:
            parts.append("deterministic")
        if self.emulate:
            parts.append(f"emulate={self.emulate}")
        if self.nproc is not None:
            parts.append(f"nproc={self.nproc}")
        if self.fsdp:
            parts.append("fsdp")
        if self.autocast:
            parts.append(f"autocast={self.autocast}")
        return "+".join(parts)

    def fields(self) -> dict[str, object]:
        """The spec string and its parsed fields (what ``side`` objects in JSON hold;
        ``autocast`` only where set)."""
        out: dict[str, object] = {
            "spec": self.spec,
            "device": self.device,
            "index": self.index,
            "precision": self.precision,
            "compile": self.compile,
            "compile_backend": self.compile_backend,
            "threads": self.threads,
            "deterministic": self.deterministic,
            "emulate": self.emulate,
            "nproc": self.nproc,
            "fsdp": self.fsdp,
        }
        if self.autocast is not None:
            out["autocast"] = self.autocast
        if self.compile_mode is not None:
            out["compile_mode"] = self.compile_mode
        return out

    def config_differences(self, other: SideSpec) -> list[tuple[str, str, str]]:
        """The settings that differ between two sides, as (setting, self, other)."""
        out = []
        mine, theirs = self.fields(), other.fields()
        for key in SIDE_FIELDS:
            if mine.get(key) != theirs.get(key):
                out.append((key, _show(mine.get(key)), _show(theirs.get(key))))
        return out


def _show(value: object) -> str:
    return "default" if value is None else str(value)


@functools.lru_cache(maxsize=256)
def parse_side(text: str) -> SideSpec:
    """Parse ``DEVICE[:INDEX][+OPTION...]``; raise SpecError naming the valid choices.
    Whether the device exists is ``devices.names.check_device_name``'s to say (the request
    checks it; a stored spec is parsed as written).

    A text is parsed once per process, its typed side kept (frozen): the command line's
    early refusal, the option table and the index's filters read the same ``SideSpec``
    (an error is not kept: a bad spec is refused each time it is given)."""
    text = text.strip()
    if not text:
        raise SpecError("empty side spec: write a device such as cpu, cuda or cpu+bf16")
    head, *options = text.split("+")
    match = _DEVICE_RE.fullmatch(head)
    if match is None:
        raise SpecError(
            f"malformed device {head!r} in side spec {text!r}: write DEVICE or DEVICE:INDEX, "
            "e.g. cuda:1"
        )
    device = match["type"]
    index = int(match["index"]) if match["index"] is not None else None
    values: dict[str, Any] = {"device": device, "index": index}
    seen: set[str] = set()
    for option in options:
        key, _, value = option.partition("=")
        key = key.strip()
        name = "precision" if key in PRECISIONS else key
        if name in seen:
            raise SpecError(
                f"option {key!r} given twice in side spec {text!r}: give each option once"
            )
        seen.add(name)
        values.update(_option(key, value, option, text))
    return SideSpec(**values)


def _number(key: str, value: str, text: str, example: str) -> int:
    if not (value.isascii() and value.isdigit()):
        raise SpecError(f"{key} needs a whole number in side spec {text!r}: {example}")
    return int(value)


def _named(key: str, value: str, text: str, what: str, choices: Sequence[str]) -> str:
    if not value:
        raise SpecError(f"{key} needs {what} in {text!r}: one of {', '.join(choices)}")
    return value


def _option(key: str, value: str, option: str, text: str) -> dict[str, object]:
    """The fields of a side that one ``+OPTION`` of ``text`` sets; SpecError for an
    unknown option or a value it does not take."""
    if key in PRECISIONS and not value:
        return {"precision": key}
    if key == "compile":
        return {"compile": True, "compile_backend": value or None}
    if key == "threads":
        return {"threads": _number(key, value, text, "threads=4")}
    if key == "nproc":
        return {"nproc": _number(key, value, text, "nproc=2")}
    if key in ("deterministic", "fsdp") and not value:
        return {key: True}
    if key == "compile-mode":
        return {"compile_mode": _named(key, value, text, "a mode", COMPILE_MODES)}
    if key == "autocast":
        return {"autocast": _named(key, value, text, "a policy", AUTOCAST_POLICIES)}
    if key == "emulate":
        return {"emulate": _named(key, value, text, "a profile", EMULATE_PROFILES)}
    raise SpecError(
        f"unknown option {option!r} in side spec {text!r}: use one of {', '.join(OPTIONS)}"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkloadSpec:
    """What to run: a workload name and the size knobs that enter its fingerprint."""

    name: str
    size: str = "tiny"
    batch_size: int | None = None
    seq_len: int | None = None
    steps: int | None = None
    seed: int = 0
    overrides: tuple[tuple[str, str], ...] = field(default=())
    #: script mode: the command after ``--`` (size ``script``)
    script: tuple[str, ...] | None = omit_none()
    #: ``--task``: what an ``hf:PATH`` checkpoint does (default: from its architectures)
    task: Task | None = omit_none()
    #: ``--data FILE[:FIELD]``: a text, JSONL, CSV or Parquet file or a ``datasets``
    #: directory whose tokens become the frozen data (see ``parity.workloads.sample``)
    data: str | None = omit_none()
    #: ``--generate-loop``: what a generation step times (default: parity's own loop)
    generate_loop: GenerateLoopName | None = omit_none()

    def __post_init__(self) -> None:
        if self.script is not None:
            if self.size != "script":
                raise SpecError("a script's workload spec has size 'script'")
            return
        if self.size not in SIZES:
            raise SpecError(f"size {self.size!r} is unknown: use one of {', '.join(SIZES)}")
        parse_task(self.task)  # a caller that skipped the types
        parse_generate_loop(self.generate_loop)
        if self.data is not None and not self.data.strip():
            raise SpecError("--data is empty: name a file, e.g. --data notes.jsonl:text")
        for knob in ("batch_size", "seq_len", "steps"):
            value = getattr(self, knob)
            if value is not None and value < 1:
                raise SpecError(f"--{knob.replace('_', '-')} must be at least 1, got {value}")
        if self.seed < 0:
            raise SpecError(f"--seed must be 0 or more, got {self.seed}")

    def with_overrides(self, **knobs: Any) -> WorkloadSpec:
        return replace(self, **{k: v for k, v in knobs.items() if v is not None})

    @property
    def loop(self) -> GenerateLoopName:
        """The generation loop that runs (``parity`` unless ``--generate-loop`` says)."""
        return self.generate_loop or "parity"


def parse_task(value: object) -> Task | None:
    """``--task`` as one of ``TASKS`` (None: not given); SpecError names the choices."""
    if value is None:
        return None
    for task in TASKS:
        if value == task:
            return task
    raise SpecError(f"--task {value!r} is unknown: use one of {', '.join(TASKS)}")


def parse_generate_loop(value: object) -> GenerateLoopName | None:
    """``--generate-loop`` as one of ``GENERATE_LOOPS`` (None: not given)."""
    if value is None:
        return None
    for loop in GENERATE_LOOPS:
        if value == loop:
            return loop
    raise SpecError(
        f"--generate-loop {value!r} is unknown: use parity (parity's own decoding loop) or hf "
        "(the model's generate())"
    )


def check_generate_loop(workload: WorkloadSpec | None, *sides: SideSpec) -> None:
    """``--generate-loop hf`` times ``model.generate()``, which calls the model's own,
    uncompiled forward: a side that compiles is refused rather than silently not compiled."""
    if workload is None or workload.loop != "hf":
        return
    for side in sides:
        if side.compile:
            raise SpecError(
                f"side {side}: --generate-loop hf times the model's generate(), which calls "
                "the uncompiled model: drop +compile, or use --generate-loop parity"
            )


def parse_overrides(items: list[str] | tuple[str, ...] | None) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` items (``--hf-config``) into ``WorkloadSpec.overrides``."""
    out = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"--hf-config {item!r} must be KEY=VALUE, e.g. n_layer=4")
        out.append((key.strip(), value.strip()))
    return tuple(out)
