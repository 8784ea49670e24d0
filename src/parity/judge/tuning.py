"""Tuning asymmetry: every speed setting one side has and the other lacks, and which way
it moves the target/baseline step time ratio.

A fully tuned baseline (compiled, bf16, TF32, all threads) against a first-run target
measures the tuning, not the hardware: the speed verdict over such sides carries a label
in every output (``Tuning.label``) unless the plan declares the asymmetry intended
(``[tuning] intended = "why"``, ``--tuning-intended``). The settings are read from what
each side resolved and ran (the bundle's ``resolved`` settings and device flags), not
from what was asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from parity.model.fair import SPEED_FLAGS, Optimisation, Tuning
from parity.model.findings import Finding
from parity.model.manifest import FlagValue, Resolved
from parity.model.roles import ByRole, Role
from parity.model.spec import SideSpec

#: how the section is read (``parity.report.words.METHODS``)
METHOD = "tuning.resolved-settings"
#: the determinism row where a deterministic ``neuron`` side also lost its op fusion (a
#: setting's code, ``parity.report.words.SETTINGS``)
FUSION_SETTING = "tuning.neuron-determinism"


def _one_sided(setting: str, a: str, b: str, ahead: Role | None) -> Optimisation:
    return Optimisation(setting=setting, baseline=a, target=b, side=ahead)


def _ahead(a: float, b: float) -> Role | None:
    return "baseline" if a > b else "target" if b > a else None


def _spec_rows(
    a: SideSpec, b: SideSpec, backends: tuple[str | None, str | None]
) -> list[Optimisation]:
    rows = []
    if a.compile != b.compile:
        a = replace(a, compile_backend=backends[0] or a.compile_backend) if a.compile else a
        b = replace(b, compile_backend=backends[1] or b.compile_backend) if b.compile else b
        rows.append(
            _one_sided(
                "torch.compile", _compiled(a), _compiled(b), "baseline" if a.compile else "target"
            )
        )
    if a.deterministic != b.deterministic:  # deterministic kernels are the slower ones
        ahead: Role = "target" if a.deterministic else "baseline"
        rows.append(
            _one_sided(
                "non-deterministic kernels",
                _flag(not a.deterministic),
                _flag(not b.deterministic),
                ahead,
            )
        )
    pa, pb = a.nproc or 1, b.nproc or 1
    if pa != pb:
        rows.append(_one_sided("processes (nproc)", str(pa), str(pb), _ahead(pa, pb)))
    if a.fsdp != b.fsdp:
        rows.append(_one_sided("FSDP sharding", _flag(a.fsdp), _flag(b.fsdp), None))
    return rows


def _compiled(s: SideSpec) -> str:
    return f"compile={s.compile_backend or 'default backend'}" if s.compile else "eager"


def _flag(on: bool) -> str:
    return "on" if on else "off"


def _resolved_rows(a: Resolved, b: Resolved) -> list[Optimisation]:
    rows = []
    if a.compile_backend and b.compile_backend and a.compile_backend != b.compile_backend:
        rows.append(_one_sided("compile backend", a.compile_backend, b.compile_backend, None))
    # the mode as it ran: one a backend ignored (neuron's) is not credited to its side
    ma, mb = (a.compile_mode or "default"), (b.compile_mode or "default")
    if a.compile_backend and b.compile_backend and ma != mb:
        tuned: Role | None = (
            "baseline" if mb == "default" else "target" if ma == "default" else None
        )
        rows.append(_one_sided("torch.compile mode", ma, mb, tuned))
    reduced_a, reduced_b = a.precision != "fp32", b.precision != "fp32"
    if reduced_a != reduced_b:
        ahead: Role = "baseline" if reduced_a else "target"
        rows.append(_one_sided("reduced precision (autocast)", a.precision, b.precision, ahead))
    else:
        for name, label in (("matmul", "matmul format"), ("conv", "convolution format")):
            x, y = getattr(a, name), getattr(b, name)
            if x != y and "fp32" in (x, y):  # TF32 (or lower) on one side only
                rows.append(
                    _one_sided(f"{label} (TF32)", x, y, "target" if x == "fp32" else "baseline")
                )
    if a.threads != b.threads:
        rows.append(
            _one_sided("threads", str(a.threads), str(b.threads), _ahead(a.threads, b.threads))
        )
    return rows


def _flag_rows(fa: Mapping[str, FlagValue], fb: Mapping[str, FlagValue]) -> list[Optimisation]:
    rows = []
    for key, label in SPEED_FLAGS.items():
        if key in fa and key in fb and bool(fa[key]) != bool(fb[key]):
            ahead: Role = "baseline" if fa[key] else "target"
            rows.append(_one_sided(label, _flag(bool(fa[key])), _flag(bool(fb[key])), ahead))
    return rows


#: what a device adapter's ``enable_determinism`` says when determinism also turns off
#: TorchNeuron's Adaptive Eager Execution (its op fusion)
FUSION_OFF = "adaptive_eager=off"


def _fusion_said(
    rows: list[Optimisation], ra: Resolved | None, rb: Resolved | None
) -> list[Optimisation]:
    """The determinism row names the op fusion a deterministic ``neuron`` side lost."""
    lost = any(
        r is not None and any(d.startswith(FUSION_OFF) for d in r.determinism) for r in (ra, rb)
    )
    if not lost:
        return rows
    return [
        replace(r, setting=FUSION_SETTING) if r.setting == "non-deterministic kernels" else r
        for r in rows
    ]


def batch_rows(batch: int | None, a: SideSpec, b: SideSpec) -> list[Optimisation]:
    """The batch each device sees (the global batch over the processes): a larger one
    keeps a device busier."""
    pa, pb = a.nproc or 1, b.nproc or 1
    if batch is None or pa == pb:
        return []
    ba, bb = batch / pa, batch / pb
    return [_one_sided("batch per device", f"{ba:g}", f"{bb:g}", _ahead(ba, bb))]


def label(rows: tuple[Optimisation, ...]) -> Finding | None:
    """The label a speed verdict over these sides carries (None: like with like): the side
    tuned (``tuned``: None where both are, differently) and the settings."""
    ahead = {r.side for r in rows}
    if not rows:
        return None
    tuned = next(iter(ahead)) if len(ahead) == 1 else None
    return Finding(
        code="tuning.asymmetric",
        severity="reading",
        figures={"tuned": tuned, "settings": [r.setting for r in rows]},
    )


def judge_tuning(
    specs: ByRole[SideSpec],
    resolved: ByRole[Resolved | None],
    flags: ByRole[Mapping[str, FlagValue]],
    *,
    batch: int | None,
    intended: str | None,
) -> Tuning:
    """Every optimisation one side has and the other lacks; the label unless intended."""
    a, b = specs.baseline, specs.target
    ra, rb = resolved.baseline, resolved.target
    rows = _spec_rows(
        a, b, (ra.compile_backend if ra else None, rb.compile_backend if rb else None)
    )
    if ra is not None and rb is not None:
        rows += _resolved_rows(ra, rb)
    elif a.precision != b.precision:  # a side that never resolved: as asked
        reduced: Role = "baseline" if a.precision != "fp32" else "target"
        if "fp32" in (a.precision, b.precision):
            rows.append(
                _one_sided("reduced precision (autocast)", a.precision, b.precision, reduced)
            )
    rows += _flag_rows(flags.baseline, flags.target)
    rows += batch_rows(batch, a, b)
    made = tuple(_fusion_said(rows, ra, rb))
    return Tuning(
        asymmetric=bool(made),
        optimisations=made,
        method=METHOD,
        intended=intended if made else None,
        label=None if intended else label(made),
    )
