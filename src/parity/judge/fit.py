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
from dataclasses import dataclass, replace

from parity.model.codec import Json
from parity.model.fair import (
    OPTIMIZER_STATE_BYTES,
    DeviceMemory,
    Fit,
    MemoryPart,
    ProductionShape,
    SideFit,
)
from parity.model.findings import Finding
from parity.model.metrics import Memory, MemoryPhase
from parity.model.roles import ByRole
from parity.model.workload import WorkloadDescription

WEIGHT_BYTES = 4
GRAD_BYTES = 4
PRECISION_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
#: how the parts are projected (``parity.report.words.method`` says it)
METHOD = "fit.projection"


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


def _part(
    name: str, nbytes: int, code: str, parity_only: bool = False, **figures: Json
) -> MemoryPart:
    basis = Finding(code=f"fit.{code}", severity="context", figures=figures)
    return MemoryPart(name=name, bytes=nbytes, basis=basis, parity_only=parity_only)


def project(measured: Measured, small: Shape, big: Shape, precision: str) -> SideFit | Finding:
    """The peak of ``big`` from a side's measurement of ``small``; a finding when the
    measurement lacks a figure."""
    host = measured.host
    load, steps = _peak(measured.memory.load, host), _peak(measured.memory.steps, host)
    if load is None or steps is None:
        return Finding(code="fit.no-peak", severity="context")
    grads_m, opt_m = _states(small)
    probe_m = small.parameters * WEIGHT_BYTES if host and measured.probed else 0
    held = steps - load - grads_m - opt_m - probe_m - _kv(small, measured.precision)
    per_item = max(0, held) / (small.batch * small.tokens)
    parts = _model_parts(big, precision)
    act = round(per_item * big.batch * big.tokens)
    per = round(per_item)
    parts += [
        _part("activations", act, "activations", per=per, batch=big.batch, tokens=big.tokens),
        _part(
            "runtime",
            max(0, load - (2 if host else 1) * small.parameters * WEIGHT_BYTES),
            "runtime",
        ),
    ]
    weights = big.parameters * WEIGHT_BYTES
    if host:
        parts.append(_part("loaded frozen weights", weights, "host-copy", parity_only=True))
        if measured.probed:
            parts.append(_part("probe's starting weights", weights, "probe-copy", parity_only=True))
    grads, opt = _states(big)
    return _side_fit(tuple(parts), measured.device_memory, sharded=weights + grads + opt)


def _model_parts(big: Shape, precision: str) -> list[MemoryPart]:
    """Weights; gradients and optimizer states (training); the KV cache (generation)."""
    weights = big.parameters * WEIGHT_BYTES
    parts = [_part("weights", weights, "weights", parameters=big.parameters)]
    grads, opt = _states(big)
    if big.kind == "train":
        per = OPTIMIZER_STATE_BYTES.get(big.optimizer or "adamw", 8)
        parts += [
            _part("gradients", grads, "gradients"),
            _part("optimizer states", opt, "optimizer", optimizer=big.optimizer, per=per),
        ]
    kv = _kv(big, precision)
    if kv:
        size = PRECISION_BYTES.get(precision, 4)
        parts.append(
            _part(
                "KV cache",
                kv,
                "kv-cache",
                layers=big.layers,
                width=big.width,
                batch=big.batch,
                tokens=big.tokens,
                size=size,
            )
        )
    return parts


def _side_fit(parts: tuple[MemoryPart, ...], memory: DeviceMemory | None, sharded: int) -> SideFit:
    peak = sum(p.bytes for p in parts if not p.parity_only)
    run_peak = sum(p.bytes for p in parts)
    if memory is None:
        return SideFit(parts=parts, peak_bytes=peak, run_peak_bytes=run_peak)
    margin = memory.bytes - peak
    unsharded = peak - sharded
    devices = None
    if memory.bytes > unsharded:
        devices = max(1, math.ceil(sharded / (memory.bytes - unsharded)))
    return SideFit(
        parts=parts,
        peak_bytes=peak,
        run_peak_bytes=run_peak,
        memory=memory,
        fits=margin >= 0,
        margin_bytes=margin,
        fsdp_devices=devices,
    )


def judge_fit(
    description: WorkloadDescription,
    production: ProductionShape | None,
    measured: ByRole[Measured | None],
) -> Fit:
    """Each side's projected peak at production size (``measured``: None for a side that
    did not run)."""
    if production is None:
        return _not_projected("fit.no-production")
    small = Shape.of(description)
    if small is None:
        return _not_projected("fit.no-shape")
    big = small.production(production)
    sides: dict[str, SideFit] = {}
    for role, m in measured.items():
        if m is None:
            return _not_projected("fit.side-missing", role=role)
        made = project(m, small, big, production.precision or m.precision)
        if isinstance(made, Finding):
            return Fit(
                available=False, method=METHOD, finding=replace(made, figures={"role": role})
            )
        sides[role] = made
    return Fit(
        available=True,
        method=METHOD,
        sides=ByRole(baseline=sides["baseline"], target=sides["target"]),
    )


def _not_projected(code: str, **figures: Json) -> Fit:
    return Fit(
        available=False,
        method=METHOD,
        finding=Finding(code=code, severity="context", figures=figures),
    )
