"""Fit at production size: each side's peak memory projected from what it measured to
the declared production shape, against its device memory.

The parts, for the production parameter count P, batch B and tokens per sample T:

- weights: 4 bytes a parameter (the sides keep fp32 weights; autocast casts on the fly);
- training: gradients, 4 bytes a parameter, and optimizer states by optimizer kind
  (``OPTIMIZER_STATE_BYTES``: AdamW 8);
- generation: the key/value cache, 2 x layers x width x B x (prompt + new tokens) at the
  production precision's bytes, with layers and width grown from the measured model's by
  (P / P measured)^(1/3) each (the same aspect ratio);
- activations: what the measured steps held beyond those (steps peak - load peak -
  gradients - optimizer states - the measured key/value cache), per sample-token, times
  B x T. They are scaled by samples and tokens only: a production model wider than the
  measured one holds more per token, so this part is a lower bound then;
- the runtime: the load peak less the weights it held (the interpreter and libraries on a
  host side, data and workspace on a device), carried over unchanged.

On a host side (memory read as the process's peak RSS) parity's run also holds the frozen
weights it loaded beside the model and, in a repeat that ran the numerics probe, a copy
of the starting weights: parts marked ``parity_only``, in the run's projected peak (what a
measurement of parity's run is checked against) and not in the production job's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from parity.model.fair import (
    OPTIMIZER_STATE_BYTES,
    DeviceMemory,
    Fit,
    MemoryPart,
    ProductionShape,
    SideFit,
)
from parity.model.metrics import Memory, MemoryPhase
from parity.model.roles import ByRole
from parity.model.workload import WorkloadDescription

WEIGHT_BYTES = 4
GRAD_BYTES = 4
PRECISION_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
METHOD = (
    "weights 4 B/parameter, gradients 4 B and optimizer states by kind (training), the "
    "key/value cache at the declared batch and length (generation; layers and width grown "
    "as the cube root of the parameter ratio), activations per sample-token from the "
    "measured steps' peak (scaled by samples and tokens only: a lower bound for a wider "
    "production model), the runtime as measured at load; FSDP shards weights, gradients "
    "and optimizer states"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Measured:
    """What one side measured that the projection starts from."""

    memory: Memory
    #: peaks read as the host's RSS (a CPU side): parity's own copies count
    host: bool
    #: this repeat ran the numerics probe (a copy of the starting weights)
    probed: bool
    precision: str
    device_memory: DeviceMemory | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Shape:
    """A workload's size: parameters, batch, tokens per sample, optimizer, model config."""

    kind: str
    parameters: int
    batch: int
    tokens: int
    new_tokens: int
    optimizer: str | None
    layers: int | None
    width: int | None
    #: the workload has a sequence (an MLP or a CNN has none: tokens per sample stay 1)
    sequence: bool = True

    @classmethod
    def of(cls, d: WorkloadDescription) -> Shape | None:
        if d.parameters is None or d.batch_size is None:
            return None
        config = d.config
        new = _int(config.get("new_tokens")) or 0
        return cls(
            kind=d.kind,
            parameters=d.parameters,
            batch=d.batch_size,
            tokens=(d.seq_len or 1) + new,
            new_tokens=new,
            optimizer=d.optimizer,
            layers=_int(config.get("n_layers")),
            width=_int(config.get("d_model")),
            sequence=d.seq_len is not None,
        )

    def production(self, p: ProductionShape) -> Shape:
        """This shape with every dimension production declares replacing it."""
        new = p.max_new_tokens if p.max_new_tokens is not None else self.new_tokens
        seq = self.tokens - self.new_tokens
        if p.seq_len is not None and self.sequence:  # a sequence-less model scales by batch
            seq = p.seq_len
        ratio = (p.parameters or self.parameters) / self.parameters
        grow = ratio ** (1 / 3)
        return Shape(
            kind=self.kind,
            parameters=p.parameters or self.parameters,
            batch=p.batch_size or self.batch,
            tokens=seq + new,
            new_tokens=new,
            optimizer=p.optimizer or self.optimizer,
            layers=None if self.layers is None else max(1, round(self.layers * grow)),
            width=None if self.width is None else max(1, round(self.width * grow)),
            sequence=self.sequence,
        )


def bytes_text(n: int) -> str:
    """Bytes in binary units, three significant figures (``1.25 GiB``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:,.3g} TiB"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _peak(phase: MemoryPhase | None, host: bool) -> int | None:
    if phase is None:
        return None
    return phase.host_peak_rss if host else phase.device.allocated


def _states(s: Shape) -> tuple[int, int]:
    """Gradient and optimizer-state bytes of a training shape (0, 0 otherwise)."""
    if s.kind != "train":
        return 0, 0
    per = OPTIMIZER_STATE_BYTES.get(s.optimizer or "adamw", 8)
    return s.parameters * GRAD_BYTES, s.parameters * per


def _kv(s: Shape, precision: str) -> int:
    if s.kind != "generate" or s.layers is None or s.width is None:
        return 0
    return 2 * s.layers * s.width * s.batch * s.tokens * PRECISION_BYTES.get(precision, 4)


def project(measured: Measured, small: Shape, big: Shape, precision: str) -> SideFit | str:
    """The peak of ``big`` from a side's measurement of ``small``; a reason when the
    measurement lacks a figure."""
    host = measured.host
    load, steps = _peak(measured.memory.load, host), _peak(measured.memory.steps, host)
    if load is None or steps is None:
        return "the side recorded no memory peak for its load and its steps"
    grads_m, opt_m = _states(small)
    probe_m = small.parameters * WEIGHT_BYTES if host and measured.probed else 0
    held = steps - load - grads_m - opt_m - probe_m - _kv(small, measured.precision)
    per_item = max(0, held) / (small.batch * small.tokens)
    parts = _model_parts(big, precision)
    act = round(per_item * big.batch * big.tokens)
    scale = f"{big.batch} x {big.tokens}"
    parts += [
        MemoryPart(
            name="activations",
            bytes=act,
            how=f"{bytes_text(round(per_item))} a sample-token measured x {scale}",
        ),
        MemoryPart(
            name="runtime",
            bytes=max(0, load - (2 if host else 1) * small.parameters * WEIGHT_BYTES),
            how="the load peak less its weights",
        ),
    ]
    weights = big.parameters * WEIGHT_BYTES
    if host:
        copies = [("loaded frozen weights", "parity's host copy")]
        if measured.probed:
            copies.append(("probe's starting weights", "the numerics probe's copy"))
        parts += [MemoryPart(name=n, bytes=weights, how=h, parity_only=True) for n, h in copies]
    grads, opt = _states(big)
    return _side_fit(tuple(parts), measured.device_memory, sharded=weights + grads + opt)


def _model_parts(big: Shape, precision: str) -> list[MemoryPart]:
    """Weights; gradients and optimizer states (training); the KV cache (generation)."""
    weights = big.parameters * WEIGHT_BYTES
    parts = [MemoryPart(name="weights", bytes=weights, how=f"{big.parameters:,} parameters x 4 B")]
    grads, opt = _states(big)
    if big.kind == "train":
        kind = big.optimizer or "adamw (assumed)"
        per = OPTIMIZER_STATE_BYTES.get(big.optimizer or "adamw", 8)
        parts += [
            MemoryPart(name="gradients", bytes=grads, how="4 B a parameter"),
            MemoryPart(name="optimizer states", bytes=opt, how=f"{kind}: {per} B a parameter"),
        ]
    kv = _kv(big, precision)
    if kv:
        size = PRECISION_BYTES.get(precision, 4)
        how = (
            f"2 x {big.layers} layers x {big.width} wide x {big.batch} x {big.tokens} "
            f"tokens x {size} B"
        )
        parts.append(MemoryPart(name="KV cache", bytes=kv, how=how))
    return parts


def _side_fit(parts: tuple[MemoryPart, ...], memory: DeviceMemory | None, sharded: int) -> SideFit:
    peak = sum(p.bytes for p in parts if not p.parity_only)
    run_peak = sum(p.bytes for p in parts)
    if memory is None:
        return SideFit(
            parts=parts,
            peak_bytes=peak,
            run_peak_bytes=run_peak,
            summary=f"projected peak {bytes_text(peak)}; device memory unknown (not reported, "
            "not in devices/specs.toml): fit not judged",
        )
    margin = memory.bytes - peak
    unsharded = peak - sharded
    devices = None
    if memory.bytes > unsharded:
        devices = max(1, math.ceil(sharded / (memory.bytes - unsharded)))
    if margin >= 0:
        summary = (
            f"fits: projected peak {bytes_text(peak)} of {bytes_text(memory.bytes)} "
            f"({bytes_text(margin)} to spare)"
        )
    else:
        how = (
            f"fits on {devices} devices with FSDP"
            if devices is not None
            else "no device count fits: activations and runtime alone exceed one device"
        )
        summary = (
            f"does not fit: projected peak {bytes_text(peak)} exceeds {bytes_text(memory.bytes)} "
            f"by {bytes_text(-margin)} ({peak / memory.bytes:.1f}x); {how}"
        )
    return SideFit(
        parts=parts,
        peak_bytes=peak,
        run_peak_bytes=run_peak,
        memory=memory,
        fits=margin >= 0,
        margin_bytes=margin,
        fsdp_devices=devices,
        summary=summary,
    )


def judge_fit(
    description: WorkloadDescription,
    production: ProductionShape | None,
    measured: ByRole[Measured | None],
) -> Fit:
    """Each side's projected peak at production size (``measured``: None for a side that
    did not run)."""
    if production is None:
        return Fit(
            available=False,
            method=METHOD,
            reason="no production shape declared ([production] in the plan, --production): "
            "fit at production size not checked",
        )
    small = Shape.of(description)
    if small is None:
        return Fit(
            available=False,
            method=METHOD,
            reason="the workload reports no parameter count or batch size to project from",
        )
    big = small.production(production)
    sides: dict[str, SideFit] = {}
    for role, m in measured.items():
        if m is None:
            return Fit(available=False, method=METHOD, reason=f"the {role} did not run")
        made = project(m, small, big, production.precision or m.precision)
        if isinstance(made, str):
            return Fit(available=False, method=METHOD, reason=f"the {role}: {made}")
        sides[role] = made
    return Fit(
        available=True,
        method=METHOD,
        sides=ByRole(baseline=sides["baseline"], target=sides["target"]),
    )
